import type { AnyAgentTool } from '@naalya/agent-tools';

/**
 * Where an id sits in a tool's arguments: object keys, with `[]` for "every element of this array". Read from the
 * tool's own zod schema, so a tool added to RPC_AGENT_TOOLS with a new id argument is attacked without anyone
 * remembering to list it (and fails the coverage test until it has an id pool and a call template).
 */
export type IdPath = readonly string[];

type ZodNode = { _zod: { def: { type: string; shape?: Record<string, ZodNode>; innerType?: ZodNode; element?: ZodNode; in?: ZodNode } } };

/** An argument names an id when its key ends in Id or Ids, the one convention every tool schema follows. */
export const isIdKey = (key: string): boolean => /[a-z](Id|Ids)$/.test(key);

const walk = (node: ZodNode, path: string[], found: IdPath[], key?: string): void => {
  const def = node._zod.def;
  switch (def.type) {
    case 'object':
      for (const [child, schema] of Object.entries(def.shape ?? {})) walk(schema, [...path, child], found, child);
      return;
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
      walk(def.innerType as ZodNode, path, found, key);
      return;
    case 'pipe':
      walk(def.in as ZodNode, path, found, key);
      return;
    case 'array':
      walk(def.element as ZodNode, [...path, '[]'], found, key);
      return;
    default:
      if (key !== undefined && isIdKey(key)) found.push(path);
  }
};

/** Every id argument of a tool, e.g. `classId`, `entries.[].studentId`. */
export const idArgPaths = (tool: AnyAgentTool): IdPath[] => {
  const found: IdPath[] = [];
  walk(tool.schema as unknown as ZodNode, [], found);
  return found;
};

/** The argument name an id path ends in: what decides which pool of rows its values come from. */
export const idKeyOf = (path: IdPath): string => path[path.length - 1] as string;

export const describePath = (path: IdPath): string => path.join('.').replaceAll('.[]', '[]');

/** The top-level argument names of a tool's schema: injection must add keys outside this set. */
export const argKeysOf = (tool: AnyAgentTool): string[] => Object.keys((tool.schema as unknown as ZodNode)._zod.def.shape ?? {});

/**
 * A copy of `args` with the value at `path` replaced. For `[]` segments `pick(length)` says which elements change
 * (all by default); an absent optional argument is created, an absent array is not (there is nothing to replace in).
 */
export const withIdAt = (
  args: Record<string, unknown>,
  path: IdPath,
  value: (index: number) => unknown,
  pick: (length: number) => number[] = (length) => [...Array(length).keys()],
): Record<string, unknown> => {
  let counter = 0;
  const set = (node: unknown, rest: readonly string[]): unknown => {
    const [head, ...tail] = rest;
    if (head === undefined) return value(counter++);
    if (head === '[]') {
      if (!Array.isArray(node)) return node;
      const chosen = new Set(pick(node.length));
      return node.map((element, index) => (chosen.has(index) ? set(element, tail) : element));
    }
    const object = (node ?? {}) as Record<string, unknown>;
    if (tail.length > 0 && object[head] === undefined) return object;
    return { ...object, [head]: set(object[head], tail) };
  };
  return set(args, path) as Record<string, unknown>;
};

/** A copy of an object with an own enumerable key, even `__proto__` (an object literal would set the prototype instead). */
export const withOwnKey = <T extends object>(target: T, key: string, value: unknown): T =>
  Object.defineProperty({ ...target }, key, { value, enumerable: true, writable: true, configurable: true });
