import { hash, randomBytes } from 'node:crypto';
import { ForbiddenException, HttpException, HttpStatus, Inject, Injectable, NotFoundException } from '@nestjs/common';
import { HTTP_ERROR_SENTENCES, USER_TYPES, type ConnectedApp, type ConnectedAppCreated, type UserType } from '@naalya/access';
import { DataSource } from 'typeorm';
import { IdentityService } from '../../core/auth/identity.service.js';
import type { JwtPayload } from '../../core/auth/jwt-payload.js';
import { SERVER_CONFIG, type ServerConfig } from '../../core/config/server-config.js';
import { lockUntilCommit } from '../../core/database/advisory-lock.js';
import { withCode } from '../../core/http/error-code.js';
import { currentManager } from '../../core/tenancy/tenant-context.js';
import { AgentContextService } from '../dispatch/agent-context.service.js';
import { asCaller } from '../threads/agent-caller.guard.js';

/** Every token the door accepts starts with this, so a leaked one is recognisable (secret scanners) and never a JWT. */
export const MCP_TOKEN_PREFIX = 'nmcp_';

/** What is stored and looked up: the sha256 of the whole token. The token itself is shown once and never kept. */
export const mcpTokenHash = (token: string): string => hash('sha256', token, 'hex');

export type CreateConnectedAppDto = { name: string; campusId?: string; expiresInDays: number };

/** The person a door token stands for, as the server's records say now, and the run mode chosen at creation. */
export type McpTokenHolder = {
  tokenId: string;
  caller: JwtPayload;
  /** The campus mode chosen at creation; undefined: the whole school. */
  campusId?: string;
  expiresAt: Date;
};

/** Why the door refused a token; said to the client only as `invalid_token`, logged as the reason. */
export type McpTokenRefusal = 'malformed' | 'unknown' | 'wrong-audience' | 'revoked' | 'expired';

type TokenLookupRow = {
  id: string;
  school_id: string;
  owner_id: string;
  audience: string;
  campus_id: string | null;
  expires_at: Date;
  revoked_at: Date | null;
  user_type: string;
  home_campus_id: string | null;
};

type ConnectedAppRow = {
  id: string;
  name: string;
  audience: string;
  campus_id: string | null;
  created_at: Date;
  expires_at: Date;
  last_used_at: Date | null;
};

const CONNECTED_APP_COLUMNS = 'id, name, audience, campus_id, created_at, expires_at, last_used_at';

const toConnectedApp = (row: ConnectedAppRow): ConnectedApp => ({
  id: row.id,
  name: row.name,
  audience: row.audience,
  campusId: row.campus_id,
  createdAt: row.created_at.toISOString(),
  expiresAt: row.expires_at.toISOString(),
  lastUsedAt: row.last_used_at?.toISOString() ?? null,
});

const isUserType = (value: string): value is UserType => (USER_TYPES as readonly string[]).includes(value);

const CONNECTED_APP_NOT_FOUND = 'Connected app not found.';

/**
 * Tokens for the MCP door ("connected apps"): a signed-in member of staff issues one for the door's URL, in school or
 * campus mode, with an expiry; lists and revokes their own. The door authenticates with `authenticate`; the REST API
 * never accepts these tokens (they are not JWTs), and the door accepts nothing else.
 */
@Injectable()
export class McpTokensService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly identityService: IdentityService,
    private readonly contextService: AgentContextService,
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
  ) {}

  create(dto: CreateConnectedAppDto, caller: JwtPayload, audience: string = this.config.MCP_RESOURCE_URL): Promise<ConnectedAppCreated> {
    return asCaller(caller, async () => {
      const user = await this.identityService.assertCurrent(caller);
      // A platform administrator belongs to no school; the door pins every session to one school by its token.
      if (!user.schoolId) throw new ForbiddenException('Connected apps are for school staff: a platform administrator has no school to pin them to.');
      // The same rule as a campus chat: a campus-limited member of staff may only choose their own campus.
      const campus = dto.campusId ? await this.contextService.campusInReach(dto.campusId, user.campusId) : undefined;
      // Serialised per user, so concurrent creations cannot pass the bound together.
      await lockUntilCommit(`mcp-tokens:${user.id}`);
      const [{ live }] = (await currentManager().query(
        `SELECT count(*)::int AS live FROM mcp_tokens WHERE owner_id = $1 AND revoked_at IS NULL AND expires_at > now()`,
        [user.id],
      )) as { live: number }[];
      if (live >= this.config.MCP_TOKENS_PER_USER) {
        throw withCode('MCP_TOKEN_LIMIT', new HttpException(HTTP_ERROR_SENTENCES.MCP_TOKEN_LIMIT, HttpStatus.TOO_MANY_REQUESTS));
      }
      const token = `${MCP_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
      const [row] = (await currentManager().query(
        `INSERT INTO mcp_tokens (school_id, owner_id, name, audience, campus_id, token_hash, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, now() + make_interval(days => $7))
         RETURNING ${CONNECTED_APP_COLUMNS}`,
        [user.schoolId, user.id, dto.name, audience, campus?.id ?? null, mcpTokenHash(token), dto.expiresInDays],
      )) as ConnectedAppRow[];
      return { ...toConnectedApp(row), token };
    });
  }

  /** The caller's live connected apps, newest first; revoked and expired ones are gone from the list. */
  list(caller: JwtPayload): Promise<ConnectedApp[]> {
    return asCaller(caller, async () => {
      const rows = (await currentManager().query(
        `SELECT ${CONNECTED_APP_COLUMNS} FROM mcp_tokens
          WHERE owner_id = $1 AND revoked_at IS NULL AND expires_at > now() ORDER BY created_at DESC, id`,
        [caller.sub],
      )) as ConnectedAppRow[];
      return rows.map(toConnectedApp);
    });
  }

  /** Revokes one of the caller's tokens (idempotent); anyone else's, in any school, is not found. */
  revoke(id: string, caller: JwtPayload): Promise<void> {
    return asCaller(caller, async () => {
      const [row] = (await currentManager().query(
        // A SELECT over the update: TypeORM answers a bare UPDATE ... RETURNING as [rows, count], a SELECT as rows.
        `WITH revoked AS (UPDATE mcp_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 AND owner_id = $2 RETURNING id)
         SELECT id FROM revoked`,
        [id, caller.sub],
      )) as { id: string }[];
      if (!row) throw new NotFoundException(CONNECTED_APP_NOT_FOUND);
    });
  }

  /**
   * The holder of a bearer token presented at the door, or why it is refused. Read before any tenant is known (one
   * narrow SECURITY DEFINER lookup by hash); whether the person is still active is checked in their own frame when the
   * session opens its direct run. A login token has no row: refused as unknown.
   */
  async authenticate(token: string, audience: string): Promise<{ holder: McpTokenHolder } | { refused: McpTokenRefusal }> {
    if (!token.startsWith(MCP_TOKEN_PREFIX) || token.length > 200) return { refused: 'malformed' };
    const [row] = (await this.dataSource.query(`SELECT * FROM mcp_token_lookup($1)`, [mcpTokenHash(token)])) as TokenLookupRow[];
    if (!row || !isUserType(row.user_type)) return { refused: 'unknown' };
    // RFC 8707: a token issued for another resource (another deployment's door, or this one under another URL) is no key here.
    if (row.audience !== audience) return { refused: 'wrong-audience' };
    if (row.revoked_at) return { refused: 'revoked' };
    if (row.expires_at.getTime() <= Date.now()) return { refused: 'expired' };
    const now = Math.floor(Date.now() / 1000);
    return {
      holder: {
        tokenId: row.id,
        caller: {
          sub: row.owner_id,
          type: row.user_type,
          schoolId: row.school_id,
          campusId: row.home_campus_id,
          iat: now,
          exp: Math.floor(row.expires_at.getTime() / 1000),
        },
        ...(row.campus_id ? { campusId: row.campus_id } : {}),
        expiresAt: row.expires_at,
      },
    };
  }

  /** When the token was last used, for the connected apps list; in the holder's own frame. */
  touch(holder: McpTokenHolder): Promise<void> {
    return asCaller(holder.caller, async () => {
      await currentManager().query(`UPDATE mcp_tokens SET last_used_at = now() WHERE id = $1`, [holder.tokenId]);
    });
  }
}
