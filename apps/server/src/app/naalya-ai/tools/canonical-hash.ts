import { hash } from 'node:crypto';
import { canonicalJson } from '@naalya/agent-tools';

/**
 * sha256 (hex) of the canonical JSON of a value: the same bytes as the worker's hash of the same arguments. The one-shot
 * hash(): a Hash object per call was ~2 % of the server's CPU on an audited write (perf, bench/).
 */
export const canonicalHash = (value: unknown): string => hash('sha256', canonicalJson(value), 'hex');
