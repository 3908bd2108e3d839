import type { ValueTransformer } from 'typeorm';

/**
 * A bigint column read as a number. node-postgres returns bigint as a string (it may exceed 2^53); the counts kept in
 * these columns (tokens) stay far below that, and a client reads them as numbers.
 */
export const BIGINT_AS_NUMBER: ValueTransformer = {
  to: (value: number | null | undefined) => value,
  from: (value: string | null) => (value === null ? null : Number(value)),
};
