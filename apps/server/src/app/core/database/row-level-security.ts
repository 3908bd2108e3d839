/** The tenant a transaction runs for, as the tenant frame sets it; NULLIF because a reused connection holds ''. */
export const TENANT_SETTING = `NULLIF(current_setting('app.school_id', true), '')::uuid`;
/** Set only by runUnscoped, for platform admins' cross-school reads. */
export const PLATFORM_SETTING = `current_setting('app.platform', true) = 'on'`;
/** The acting user of the unit of work. */
export const ACTOR_SETTING = `NULLIF(current_setting('app.user_id', true), '')::uuid`;

/**
 * The floor under every tenant table: ENABLE + FORCE (the owner is bound too), one tenant policy with
 * USING and WITH CHECK, and read-only access for the platform frame. The RLS catalog test checks the result.
 */
export const tenantRowLevelSecurity = (table: string): string => `
  ALTER TABLE ${table} ENABLE ROW LEVEL SECURITY;
  ALTER TABLE ${table} FORCE ROW LEVEL SECURITY;
  CREATE POLICY ${table}_tenant ON ${table} USING (school_id = ${TENANT_SETTING}) WITH CHECK (school_id = ${TENANT_SETTING});
  CREATE POLICY ${table}_platform_read ON ${table} FOR SELECT USING (${PLATFORM_SETTING});
`;
