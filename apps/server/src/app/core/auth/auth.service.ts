import { Inject, Injectable, UnauthorizedException } from '@nestjs/common';
import jwt from 'jsonwebtoken';
import { DataSource } from 'typeorm';
import { USER_TYPES, type LoginResponse, type UserType } from '@naalya/access';
import { z } from 'zod';
import { SERVER_CONFIG, type ServerConfig } from '../config/server-config.js';
import { DEFAULT_KID, jwtKeyRing, keyOfId } from '../config/signing-key-ring.js';
import type { JwtPayload } from './jwt-payload.js';
import { verifyPassword } from './password-hasher.js';

const INVALID_LOGIN = 'Email or password is incorrect.';

const tokenSchema = z.object({
  sub: z.string(),
  type: z.enum(USER_TYPES),
  schoolId: z.string().nullable(),
  campusId: z.string().nullable(),
  iat: z.number(),
  exp: z.number(),
});

type AuthLookupRow = {
  id: string;
  school_id: string | null;
  campus_id: string | null;
  user_type: UserType;
  is_active: boolean;
  password_hash: string;
};

@Injectable()
export class AuthService {
  constructor(
    private readonly dataSource: DataSource,
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
  ) {}

  /** Login runs before any tenant is known, so it goes through the narrow SECURITY DEFINER lookup. */
  async login(email: string, password: string): Promise<LoginResponse> {
    const [user] = (await this.dataSource.query(`SELECT * FROM auth_lookup($1)`, [email])) as AuthLookupRow[];
    const valid = user ? await verifyPassword(password, user.password_hash) : false;
    if (!user || !valid || !user.is_active) throw new UnauthorizedException(INVALID_LOGIN);
    const claims = { sub: user.id, type: user.user_type, schoolId: user.school_id, campusId: user.campus_id };
    const { current } = jwtKeyRing(this.config);
    // The header names the key, so a token stays valid while its key is a previous one (see signing-key-ring.ts).
    const accessToken = jwt.sign(claims, current.secret, {
      algorithm: 'HS256',
      expiresIn: this.config.JWT_TTL_SECONDS,
      keyid: current.kid,
    });
    return { accessToken, expiresIn: this.config.JWT_TTL_SECONDS };
  }

  verify(token: string): JwtPayload {
    try {
      // The key id only chooses which of our keys to check the signature with; an unknown or retired one is refused.
      // A token without one was signed before key ids, by the key now called "default".
      const kid = jwt.decode(token, { complete: true })?.header.kid ?? DEFAULT_KID;
      const key = keyOfId(jwtKeyRing(this.config), kid);
      if (!key) throw new Error('unknown key id');
      return tokenSchema.parse(jwt.verify(token, key.secret, { algorithms: ['HS256'] }));
    } catch {
      throw new UnauthorizedException('Your session is invalid or has expired. Sign in again.');
    }
  }
}
