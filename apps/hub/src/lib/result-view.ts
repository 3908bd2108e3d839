import { RPC_AGENT_TOOLS, resultFieldsOf, resultViewOf, type ResultView } from '@naalya/agent-tools';
import { formatDateTime } from './dates';

/**
 * How the Hub lays out one tool result for a person, computed from the tool's result schema (its view and its fields'
 * roles), so a new tool gets a table, a record or a grid with no Hub code. Pure: the components only draw it.
 */

/** An id kept one click away from its row or record: which field, what it identifies, the id itself. */
export type IdRef = { key: string; resource: string; value: string };
export type Cell = { key: string; label: string; text: string };
export type TableModel = { view: 'table'; columns: { key: string; label: string }[]; rows: { cells: Cell[]; ids: IdRef[] }[] };
export type RecordModel = { view: 'record'; title?: string; entries: Cell[]; ids: IdRef[] };
export type GridModel = {
  view: 'grid';
  caption?: string;
  rowHeader: string;
  columns: string[];
  rows: { header: string; cells: string[] }[];
};
export type TextModel = { view: 'text'; text: string };
export type ResultModel = TableModel | RecordModel | GridModel | TextModel;

/** A field of a row or record and what it is to a reader (as the schema marks it, or as guessed from its key). */
type Field = { key: string; role: 'name' | 'value' } | { key: string; role: 'id'; resource: string };

const TOOLS: ReadonlyMap<string, (typeof RPC_AGENT_TOOLS)[number]> = new Map(RPC_AGENT_TOOLS.map((tool) => [tool.name, tool]));

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** "campusName" → "Campus name", "fullName" → "Full name": a field's key read out. */
export const fieldLabel = (key: string): string => {
  const words = key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[_-]+/g, ' ')
    .trim()
    .toLowerCase();
  return words ? words[0]?.toUpperCase() + words.slice(1) : key;
};

const nameOf = (item: Record<string, unknown>): string | undefined => {
  const key = Object.keys(item).find((candidate) => candidate === 'name' || candidate === 'fullName' || candidate === 'title' || /Name$/.test(candidate));
  return key && typeof item[key] === 'string' ? (item[key] as string) : undefined;
};
const ISO_DATE = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/;

/**
 * A value as a person reads it in a cell: yes/no, a dash for nothing, a count for a list, a nested thing by its name,
 * an instant in the school's time zone (a calendar date stays the date it names).
 */
export const cellText = (value: unknown, timeZone?: string): string => {
  if (value === null || value === undefined || value === '') return '—';
  if (typeof value === 'boolean') return value ? 'Yes' : 'No';
  // Two decimals at most: a mark of 99.14 stays what the teacher recorded, an average of 60.7166… becomes readable.
  if (typeof value === 'number') return String(Number(value.toFixed(2)));
  if (typeof value === 'string') return ISO_DATE.test(value) && value.includes('T') && !Number.isNaN(Date.parse(value)) ? formatDateTime(value, timeZone) : value;
  if (Array.isArray(value)) {
    if (!value.length) return 'None';
    // A list of named things (a department's members) reads as their names; anything else as how many there are.
    const names = value.map((item) => (typeof item === 'string' ? item : isRecord(item) ? nameOf(item) : undefined));
    if (names.every((name): name is string => name !== undefined)) {
      return names.length > 3 ? `${names.slice(0, 3).join(', ')} and ${names.length - 3} more` : names.join(', ');
    }
    return value.length === 1 ? '1 item' : `${value.length} items`;
  }
  if (isRecord(value)) {
    const named = ['name', 'fullName', 'title'].map((key) => value[key]).find((name) => typeof name === 'string');
    return typeof named === 'string' ? named : JSON.stringify(value);
  }
  return String(value);
};

/**
 * A result with no schema the Hub knows (a local tool, or a tool newer than this Hub): the same roles guessed from the
 * keys, so it still leads with names and keeps ids aside.
 */
const guessFields = (sample: unknown): Field[] =>
  isRecord(sample)
    ? Object.keys(sample).map((key): Field => {
        if (key === 'id' || /Id$/.test(key)) return { key, role: 'id', resource: key === 'id' ? 'item' : fieldLabel(key.slice(0, -2)).toLowerCase() };
        if (key === 'name' || key === 'fullName' || key === 'title' || /Name$/.test(key)) return { key, role: 'name' };
        return { key, role: 'value' };
      })
    : [];

/** Names first (what a person looks for), then the other values, in declared order; ids are never columns. */
const ordered = (fields: Field[]) => [...fields.filter((field) => field.role === 'name'), ...fields.filter((field) => field.role === 'value')];

const idsOf = (fields: Field[], item: Record<string, unknown>): IdRef[] =>
  fields.flatMap((field) => {
    const value = item[field.key];
    return field.role === 'id' && typeof value === 'string' ? [{ key: field.key, resource: field.resource.replaceAll('_', ' '), value }] : [];
  });

const tableOf = (fields: Field[], data: unknown[], timeZone?: string): TableModel => {
  const items = data.filter(isRecord);
  const known = fields.length ? fields : guessFields(items[0]);
  const shown = ordered(known);
  return {
    view: 'table',
    columns: shown.map((field) => ({ key: field.key, label: fieldLabel(field.key) })),
    rows: items.map((item) => ({
      cells: shown.map((field) => ({ key: field.key, label: fieldLabel(field.key), text: cellText(item[field.key], timeZone) })),
      ids: idsOf(known, item),
    })),
  };
};

const recordOf = (fields: Field[], data: Record<string, unknown>, timeZone?: string): RecordModel => {
  const known = fields.length ? fields : guessFields(data);
  const names = known.filter((field) => field.role === 'name');
  const title = names[0] && typeof data[names[0].key] === 'string' ? (data[names[0].key] as string) : undefined;
  const shown = ordered(known).filter((field) => !(title !== undefined && field.key === names[0]?.key));
  return {
    view: 'record',
    ...(title === undefined ? {} : { title }),
    entries: shown.map((field) => ({ key: field.key, label: fieldLabel(field.key), text: cellText(data[field.key], timeZone) })),
    ids: idsOf(known, data),
  };
};


const namesOf = (item: Record<string, unknown>): string[] =>
  Object.keys(item).filter((key) => (key === 'name' || key === 'fullName' || key === 'title' || /Name$/.test(key)) && typeof item[key] === 'string');
const firstValue = (item: Record<string, unknown>): unknown => {
  const numeric = Object.values(item).find((value) => typeof value === 'number');
  if (numeric !== undefined) return numeric;
  return Object.entries(item).find(([key, value]) => !/Id$|^id$/.test(key) && !namesOf(item).includes(key) && !Array.isArray(value))?.[1] ?? null;
};

/**
 * A matrix read across (a gradebook: subjects, each with a mark per student; a summary: one row per class and subject).
 * Two shapes, both found in the data: a list of named columns each holding a list of named cells, or a flat list whose
 * rows name both their row and their column. Anything else is not a grid, and the caller shows it another way.
 */
export const gridOf = (data: unknown): GridModel | undefined => {
  const caption = isRecord(data) ? [data['className'], isRecord(data['term']) ? data['term']['name'] : data['term']].filter((part) => typeof part === 'string').join(', ') : '';
  const list = Array.isArray(data) ? data : isRecord(data) ? Object.values(data).find(Array.isArray) : undefined;
  if (!list) return undefined;
  const items = list.filter(isRecord);
  if (!items.length) return undefined;
  const withCaption = caption ? { caption } : {};

  // Nested: each item is a column (a subject) holding its cells (a mark per student), rows named by the inner names.
  const nestedKey = Object.keys(items[0] ?? {}).find((key) => Array.isArray(items[0]?.[key]));
  if (nestedKey) {
    const columns = items.map((item) => nameOf(item) ?? '—');
    const rowNames: string[] = [];
    const byRow = new Map<string, string[]>();
    items.forEach((item, column) => {
      for (const inner of (item[nestedKey] as unknown[]).filter(isRecord)) {
        const name = nameOf(inner) ?? '—';
        if (!byRow.has(name)) {
          rowNames.push(name);
          byRow.set(name, columns.map(() => '—'));
        }
        (byRow.get(name) as string[])[column] = cellText(firstValue(inner));
      }
    });
    const rowHeader = fieldLabel(Object.keys((items[0]?.[nestedKey] as unknown[]).find(isRecord) ?? {}).find((key) => namesOf({ [key]: '' }).length) ?? 'name');
    return { view: 'grid', ...withCaption, rowHeader, columns, rows: rowNames.map((header) => ({ header, cells: byRow.get(header) as string[] })) };
  }

  // Flat: the first name is the row (a class), the first number the cell, and the column is the next name that varies
  // within a row (a subject); a name each row has only one of (its campus) is a detail of the row, not a column.
  const [rowKey, ...others] = namesOf(items[0] ?? {});
  const columnKey = others.find((key) => {
    const seen = new Map<string, unknown>();
    return items.some((item) => {
      const row = String(item[rowKey ?? '']);
      if (seen.has(row) && seen.get(row) !== item[key]) return true;
      seen.set(row, item[key]);
      return false;
    });
  }) ?? others[0];
  if (!rowKey || !columnKey) return undefined;
  const columns = [...new Set(items.map((item) => String(item[columnKey])))];
  const rowNames = [...new Set(items.map((item) => String(item[rowKey])))];
  const cells = new Map(items.map((item) => [`${String(item[rowKey])}\u0000${String(item[columnKey])}`, cellText(firstValue(item))]));
  return {
    view: 'grid',
    ...withCaption,
    rowHeader: fieldLabel(rowKey),
    columns,
    rows: rowNames.map((header) => ({ header, cells: columns.map((column) => cells.get(`${header}\u0000${column}`) ?? '—') })),
  };
};

/** The view a result gets: its tool's (named, or from its schema's shape), or for an unknown tool, from the data's shape. */
export const viewFor = (toolName: string, data: unknown): ResultView => {
  const tool = TOOLS.get(toolName);
  if (tool) return resultViewOf(tool);
  if (Array.isArray(data)) return 'table';
  return isRecord(data) ? 'record' : 'text';
};

/**
 * The model of one result. A result that does not have its view's shape (a tool newer than its schema) falls back to
 * the shape it has, so a person still reads it, and the raw JSON stays behind the toggle either way. Instants are shown
 * in `timeZone` (the school's).
 */
export const resultModel = (toolName: string, data: unknown, timeZone?: string): ResultModel => {
  const tool = TOOLS.get(toolName);
  const fields = tool ? resultFieldsOf(tool.result) : [];
  const view = viewFor(toolName, data);
  if (view === 'grid') {
    const grid = gridOf(data);
    if (grid) return grid;
  }
  if (Array.isArray(data) && (data.length === 0 || data.every(isRecord))) return tableOf(fields, data, timeZone);
  if (isRecord(data)) return recordOf(fields, data, timeZone);
  return { view: 'text', text: typeof data === 'string' ? data : data === undefined ? '(no result)' : JSON.stringify(data, null, 2) };
};
