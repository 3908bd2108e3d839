import { BadRequestException, Body, Controller, HttpCode, Inject, Post, Req } from '@nestjs/common';
import type { LoginResponse } from '@naalya/access';
import type { IncomingMessage } from 'node:http';
import { z } from 'zod';
import { SERVER_CONFIG, type ServerConfig } from '../config/server-config.js';
import { clientAddress, parseTrustedProxies, type TrustedProxies } from '../http/client-address.js';
import { AuthService } from './auth.service.js';
import { Public } from './current-user.decorator.js';
import { LoginAttemptLimiter } from './login-attempt-limiter.js';

const loginSchema = z.strictObject({ email: z.string().trim().toLowerCase().email(), password: z.string().min(1).max(200) });

@Controller('auth')
export class AuthController {
  private readonly trustedProxies: TrustedProxies;

  constructor(
    private readonly authService: AuthService,
    private readonly limiter: LoginAttemptLimiter,
    @Inject(SERVER_CONFIG) config: ServerConfig,
  ) {
    this.trustedProxies = parseTrustedProxies(config.TRUSTED_PROXIES);
  }

  @Public()
  @Post('login')
  @HttpCode(200)
  async login(@Body() body: unknown, @Req() request: IncomingMessage): Promise<LoginResponse> {
    const parsed = loginSchema.safeParse(body);
    if (!parsed.success) throw new BadRequestException('Send an email and a password.');
    // Counted before the password is checked (the hash is the expensive part a guesser wants to run), and on the
    // normalised email, so case or spacing variants of one account share its count.
    const address = clientAddress(this.trustedProxies, request.socket.remoteAddress, request.headers['x-forwarded-for']);
    await this.limiter.take(parsed.data.email, address);
    const response = await this.authService.login(parsed.data.email, parsed.data.password);
    await this.limiter.succeeded(parsed.data.email);
    return response;
  }
}
