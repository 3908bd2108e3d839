import { createHash } from 'node:crypto';
import { canonicalJson } from '@naalya/agent-tools';

/** sha256 (hex) of the canonical JSON of a value: the same bytes as the worker's hash of the same arguments. */
export const canonicalHash = (value: unknown): string => createHash('sha256').update(canonicalJson(value)).digest('hex');
