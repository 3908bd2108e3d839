import { BadRequestException, Body, Controller, HttpCode, Post } from '@nestjs/common';
import type { LoginResponse } from '@naalya/access';
import { z } from 'zod';
import { AuthService } from './auth.service.js';
import { Public } from './current-user.decorator.js';

const loginSchema = z.strictObject({ email: z.string().trim().toLowerCase().email(), password: z.string().min(1).max(200) });

@Controller('auth')
export class AuthController {
  constructor(private readonly authService: AuthService) {}

  @Public()
  @Post('login')
  @HttpCode(200)
  login(@Body() body: unknown): Promise<LoginResponse> {
    const parsed = loginSchema.safeParse(body);
    if (!parsed.success) throw new BadRequestException('Send an email and a password.');
    return this.authService.login(parsed.data.email, parsed.data.password);
  }
}
