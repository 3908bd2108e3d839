import { isMutatingEvent, type AnyAgentTool } from '@naalya/agent-tools';
import fc from 'fast-check';
import { describePath, idArgPaths, idKeyOf, withIdAt, type IdPath } from './tool-args.js';
import { templateFor } from './tool-calls.js';
import { ID_POOLS, type PersonaKey, type Pools, type World } from './seeded-world.js';

/**
 * One cross-tenant attempt: a rightful caller's own call with some of its ids swapped for ids of rows they must never
 * reach. Three kinds of caller:
 * - 'school': the person the tool is for, in school mode; the ids come from the other school;
 * - 'campus': the same person in a chat pinned to one campus (campus-scoped tools only); the ids come from the other
 *   campus of their own school;
 * - 'platform': a platform administrator writing into one school (the target school chosen at dispatch); the ids come
 *   from the other school. Only writes: a platform administrator reads across schools by design.
 */
export type CallerMode = 'school' | 'campus' | 'platform';

export type Attempt = {
  tool: AnyAgentTool;
  /** Index of the caller's school in the world. */
  school: 0 | 1;
  mode: CallerMode;
  persona: PersonaKey | 'platformAdmin';
  /** The campus a 'campus' caller is pinned to; the other campus of the school is the forbidden one. */
  pinnedCampus?: number;
  args: Record<string, unknown>;
  /** Which id arguments were swapped, e.g. ["classId", "entries[].studentId"]. */
  swapped: string[];
};

/** Id tools: every registered tool with at least one argument named like an id. */
export const idTakingTools = (tools: readonly AnyAgentTool[]): AnyAgentTool[] => tools.filter((tool) => idArgPaths(tool).length > 0);

/** The id argument names without a pool: a new kind of id needs one before the phase can attack it. */
export const idKeysWithoutPool = (tools: readonly AnyAgentTool[]): string[] =>
  [...new Set(tools.flatMap((tool) => idArgPaths(tool).map(idKeyOf)))].filter((key) => !(key in ID_POOLS));

const poolOf = (pools: Partial<Pools>, path: IdPath): string[] => pools[ID_POOLS[idKeyOf(path) as keyof typeof ID_POOLS]] ?? [];

/** The other campus of the school, for a caller pinned to campus `pinned`. */
export const otherCampusOf = (world: World, school: 0 | 1, pinned: number) => {
  const campuses = world.schools[school].campuses;
  return campuses[(pinned + 1) % campuses.length]!;
};

const modesFor = (tool: AnyAgentTool): CallerMode[] => [
  'school',
  ...(tool.campusScoped ? (['campus'] as const) : []),
  ...(isMutatingEvent(tool.event) ? (['platform'] as const) : []),
];

/**
 * Attempts over `tools`, uniformly by tool: for each, a caller mode it supports, a non-empty subset of its id
 * arguments (and for arrays, which elements), and which forbidden row each swapped id names. Null when the chosen
 * subset had nothing forbidden to draw from (filtered out by the phase).
 */
export const crossSchoolAttempt = (world: World, tools: readonly AnyAgentTool[], unique: () => string): fc.Arbitrary<Attempt | null> =>
  fc.constantFrom(...tools).chain((tool) => {
    const paths = idArgPaths(tool);
    return fc
      .record({
        school: fc.constantFrom<0 | 1>(0, 1),
        mode: fc.constantFrom(...modesFor(tool)),
        pinnedCampus: fc.nat({ max: 1 }),
        // A non-empty subset of the id paths, as a bit mask.
        mask: fc.integer({ min: 1, max: 2 ** paths.length - 1 }),
        picks: fc.array(fc.nat(), { minLength: 16, maxLength: 16 }),
        elements: fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
      })
      .map(({ school, mode, pinnedCampus, mask, picks, elements }): Attempt | null => {
        const own = world.schools[school];
        const template = templateFor(tool, own, unique());
        // A member of staff with a home campus may only open a chat on it (dispatch refuses any other).
        const home = own.campuses.findIndex((campus) => campus.id === own.personas[template.persona].campusId);
        const pinned = home >= 0 ? home : pinnedCampus;
        const forbidden: Partial<Pools> = mode === 'campus' ? otherCampusOf(world, school, pinned).pools : world.schools[school === 0 ? 1 : 0].pools;
        let args = template.args;
        const swapped: string[] = [];
        let draw = 0;
        paths.forEach((path, index) => {
          if (!(mask & (1 << index))) return;
          const pool = poolOf(forbidden, path);
          if (!pool.length) return;
          const next = () => pool[picks[draw++ % picks.length]! % pool.length]!;
          // At least one element of an array changes; which others do is drawn too.
          const changed = withIdAt(args, path, next, (length) => {
            const chosen = [...Array(length).keys()].filter((element) => elements[element % elements.length]);
            return chosen.length ? chosen : [0];
          });
          if (JSON.stringify(changed) === JSON.stringify(args)) return;
          args = changed;
          swapped.push(describePath(path));
        });
        if (!swapped.length) return null;
        return {
          tool,
          school,
          mode,
          persona: mode === 'platform' ? 'platformAdmin' : template.persona,
          ...(mode === 'campus' ? { pinnedCampus: pinned } : {}),
          args,
          swapped,
        };
      });
  });
