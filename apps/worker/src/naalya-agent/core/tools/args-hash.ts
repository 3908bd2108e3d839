import { hash } from 'node:crypto';
import { canonicalJson } from '@naalya/agent-tools';

/**
 * sha256 (hex) of the canonical JSON of a tool call's arguments: what binds an answer to one question and an
 * approval to one call. The server hashes the arguments it parsed the same way and must arrive at the same value.
 */
export const argsHash = (args: unknown): string => hash('sha256', canonicalJson(args), 'hex');
