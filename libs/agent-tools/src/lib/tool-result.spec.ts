import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { RPC_AGENT_TOOLS } from './agent-tool-registry.js';
import { defineAgentTool, type AnyAgentTool } from './define-agent-tool.js';
import {
  defaultResultView,
  resultFieldsOf,
  resultId,
  resultMismatch,
  resultName,
  resultOnTheWire,
  resultViewOf,
} from './tool-result.js';
import { listDepartmentsTool } from './tools/department.tools.js';
import { getGradebookTool, getResultsSummaryTool } from './tools/gradebook.tools.js';
import { createLessonPlanTool } from './tools/lesson-plans.tools.js';

const tools: readonly AnyAgentTool[] = RPC_AGENT_TOOLS;
const byName = tools.map((tool) => [tool.name, tool] as const);

const unwrapped = (schema: z.ZodType): z.ZodType =>
  schema instanceof z.ZodOptional || schema instanceof z.ZodNullable ? unwrapped(schema.unwrap() as z.ZodType) : schema;

/** Fields named like an id (`id`, `campusId`) at any depth that are not marked with resultId, so a table would show a uuid. */
const unmarkedIds = (schema: z.ZodType, path = ''): string[] => {
  const shape = unwrapped(schema);
  if (shape instanceof z.ZodArray) return unmarkedIds(shape.element as z.ZodType, `${path}[]`);
  if (!(shape instanceof z.ZodObject)) return [];
  const marked = new Map(resultFieldsOf(shape).map((field) => [field.key, field.role]));
  return Object.entries(shape.shape as Record<string, z.ZodType>).flatMap(([key, field]) => [
    ...(/^id$|Id$/.test(key) && marked.get(key) !== 'id' ? [`${path}${key}`] : []),
    ...unmarkedIds(field, `${path}${key}.`),
  ]);
};

describe('result schemas of RPC_AGENT_TOOLS', () => {
  it('every registered tool has one (22 tools)', () => {
    expect(tools).toHaveLength(22);
    expect(tools.filter((tool) => !(tool.result instanceof z.ZodType)).map((tool) => tool.name)).toEqual([]);
  });

  it.each(byName)('%s: every id field is marked with resultId, so it is a link and not a column of uuids', (_, tool) => {
    expect(unmarkedIds(tool.result)).toEqual([]);
  });

  it.each(byName.filter(([, tool]) => resultViewOf(tool) === 'table'))('%s: a table row has a name to lead with', (_, tool) => {
    expect(resultFieldsOf(tool.result).filter((field) => field.role === 'name')).not.toEqual([]);
  });

  it.each(byName.filter(([, tool]) => tool.view !== undefined))('%s: a named view is better than its default, never the same', (_, tool) => {
    expect(tool.view).not.toBe(defaultResultView(tool.result));
  });

  it('catches an id field left unmarked, at any depth', () => {
    const result = z.array(z.strictObject({ id: resultId('class'), teacher: z.strictObject({ staffId: z.guid() }) }));
    expect(unmarkedIds(result)).toEqual(['[]teacher.staffId']);
  });
});

describe('result views', () => {
  it('the default comes from the shape: an array is a table, an object a record, anything else text', () => {
    expect(defaultResultView(z.array(z.strictObject({ id: resultId('campus') })))).toBe('table');
    expect(defaultResultView(z.strictObject({ id: resultId('campus') }))).toBe('record');
    expect(defaultResultView(z.strictObject({ id: resultId('campus') }).nullable())).toBe('record');
    expect(defaultResultView(resultId('department'))).toBe('text');
  });

  it('a new tool that names no view gets the default of its shape, with no client code', () => {
    const listClubs = defineAgentTool({
      name: 'list_clubs',
      event: 'list.clubs',
      description: 'List the clubs.',
      schema: z.strictObject({}),
      result: z.array(z.strictObject({ id: resultId('class'), name: resultName() })),
    });
    expect(resultViewOf(listClubs)).toBe('table');
    expect(resultViewOf(listDepartmentsTool)).toBe('table');
    expect(resultViewOf(createLessonPlanTool)).toBe('record');
  });

  it('a tool can name a better view: the gradebook and the results summary are objects read as grids', () => {
    expect(defaultResultView(getGradebookTool.result)).toBe('record');
    expect(resultViewOf(getGradebookTool)).toBe('grid');
    expect(resultViewOf(getResultsSummaryTool)).toBe('grid');
  });
});

describe('result fields', () => {
  it("marks a table row's ids with what they are the id of, and its names, through nullable", () => {
    expect(resultFieldsOf(listDepartmentsTool.result)).toEqual([
      { key: 'id', role: 'id', resource: 'department' },
      { key: 'name', role: 'name' },
      { key: 'campusId', role: 'id', resource: 'campus' },
      { key: 'campusName', role: 'value' },
      { key: 'members', role: 'value' },
    ]);
  });

  it('has no fields for a result that is neither a table nor a record', () => {
    expect(resultFieldsOf(resultId('department'))).toEqual([]);
  });
});

describe('resultMismatch', () => {
  const created = {
    id: '6a59f99c-3fdb-4df7-b1bb-488c94eee95b',
    schoolId: '0cfda372-dc92-4356-a812-09b01124c3c0',
    campusId: null,
    name: 'Sciences',
    createdAt: new Date('2026-03-02T08:00:00.000Z'),
  };
  const createDepartment = tools.find((tool) => tool.name === 'create_department')!;

  it('reads a result as it travels: a Date is checked as the ISO string a client receives', () => {
    expect(resultOnTheWire(created)).toEqual({ ...created, createdAt: '2026-03-02T08:00:00.000Z' });
    expect(resultMismatch(createDepartment, created)).toBeUndefined();
  });

  it('says which field differs and how', () => {
    const { name: _name, ...withoutName } = created;
    expect(resultMismatch(createDepartment, { ...withoutName, label: 'Sciences' })).toBe(
      'name: Invalid input: expected string, received undefined; Unrecognized key: "label"',
    );
  });

  it('names the first few issues of a list whose rows all drift, and how many more there are', () => {
    const listCampuses = tools.find((tool) => tool.name === 'list_campuses')!;
    const rows = Array.from({ length: 5 }, () => ({ id: created.id, label: 'Kisasi' }));
    expect(resultMismatch(listCampuses, rows)).toBe(
      '0.name: Invalid input: expected string, received undefined; 0: Unrecognized key: "label"; ' +
        '1.name: Invalid input: expected string, received undefined; and 7 more',
    );
  });
});
