import { BadRequestException } from '@nestjs/common';
import type { ZodType } from 'zod';

/** REST input goes through the same zod schema as the tool's arguments, so both paths accept the same DTOs. */
export const parseDto = <T>(schema: ZodType<T>, value: unknown): T => {
  const parsed = schema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  const detail = parsed.error.issues
    .map((issue) => (issue.path.length ? `${issue.path.join('.')}: ${issue.message}` : issue.message))
    .join('; ');
  throw new BadRequestException(`Invalid request: ${detail}`);
};
