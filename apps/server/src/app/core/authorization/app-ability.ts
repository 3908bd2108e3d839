import type { MongoAbility } from '@casl/ability';
import type { Action, Resource } from '@naalya/access';

/** Loaded rows are checked as `subject(resource, row)`, so conditions apply to the instance. */
export type AppAbility = MongoAbility<[Action, Resource | { __caslSubjectType__?: string } | Record<string, unknown>]>;

export type PermissionGate = { action: Action; resource: Resource };
