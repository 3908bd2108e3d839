import { describe, expect, it } from 'vitest';
import { formatDateTime } from './dates';
import { cellText, fieldLabel, gridOf, resultModel, viewFor } from './result-view';

const DEPT = '11111111-1111-4111-8111-111111111111';
const HEAD = '22222222-2222-4222-8222-222222222222';

describe('resultModel', () => {
  it('lays a list out as a table led by names, with ids kept out of the columns and beside each row', () => {
    const model = resultModel('list_staff', [
      { id: DEPT, fullName: 'Grace Namusoke', email: 'grace@greenhill.school', campusId: HEAD, campusName: 'Main', isActive: true },
    ]);
    expect(model.view).toBe('table');
    if (model.view !== 'table') return;
    expect(model.columns.map((column) => column.label)).toEqual(['Full name', 'Email', 'Campus name', 'Is active']);
    expect(model.rows[0]?.cells.map((cell) => cell.text)).toEqual(['Grace Namusoke', 'grace@greenhill.school', 'Main', 'Yes']);
    expect(model.rows[0]?.ids).toEqual([
      { key: 'id', resource: 'staff', value: DEPT },
      { key: 'campusId', resource: 'campus', value: HEAD },
    ]);
  });

  it('lays one object out as a record titled by its name', () => {
    const model = resultModel('some_future_tool', { id: DEPT, name: 'Sciences', memberCount: 4 });
    expect(model).toEqual({
      view: 'record',
      title: 'Sciences',
      entries: [{ key: 'memberCount', label: 'Member count', text: '4' }],
      ids: [{ key: 'id', resource: 'item', value: DEPT }],
    });
  });

  it('gives a tool it does not know a view from the shape of its data, with no Hub code', () => {
    expect(viewFor('some_future_tool', [{ name: 'x' }])).toBe('table');
    expect(viewFor('some_future_tool', { name: 'x' })).toBe('record');
    expect(viewFor('some_future_tool', 'plain')).toBe('text');
    expect(resultModel('some_future_tool', 'plain')).toEqual({ view: 'text', text: 'plain' });
    // A list of rows guesses its ids from the keys: the uuid never becomes a column.
    const table = resultModel('some_future_tool', [{ widgetId: DEPT, widgetName: 'A', size: 2 }]);
    expect(table.view === 'table' && table.columns.map((column) => column.key)).toEqual(['widgetName', 'size']);
  });

  it('uses the view a tool names: the gradebook is a grid of students by subjects', () => {
    expect(viewFor('get_gradebook', {})).toBe('grid');
    const model = resultModel('get_gradebook', {
      classId: DEPT,
      className: 'S1 East',
      term: { id: HEAD, name: 'Term 1' },
      subjects: [
        { subjectId: DEPT, subjectName: 'Mathematics', marks: [{ studentId: HEAD, fullName: 'Amos', score: 71 }, { studentId: DEPT, fullName: 'Beth', score: null }] },
        { subjectId: HEAD, subjectName: 'English', marks: [{ studentId: HEAD, fullName: 'Amos', score: 64.5 }] },
      ],
    });
    expect(model).toEqual({
      view: 'grid',
      caption: 'S1 East, Term 1',
      rowHeader: 'Full name',
      columns: ['Mathematics', 'English'],
      rows: [
        { header: 'Amos', cells: ['71', '64.5'] },
        { header: 'Beth', cells: ['—', '—'] },
      ],
    });
  });

  it('reads a flat summary as a grid of classes by subjects', () => {
    const grid = gridOf({
      term: 'Term 1',
      rows: [
        { classId: DEPT, className: 'S1 East', campusName: 'Main', subjectName: 'Maths', average: 61.25, marks: 4 },
        { classId: DEPT, className: 'S1 East', campusName: 'Main', subjectName: 'English', average: 70, marks: 4 },
        { classId: HEAD, className: 'S2 West', campusName: 'Main', subjectName: 'Maths', average: 55, marks: 3 },
      ],
    });
    expect(grid).toEqual({
      view: 'grid',
      caption: 'Term 1',
      rowHeader: 'Class name',
      columns: ['Maths', 'English'],
      rows: [
        { header: 'S1 East', cells: ['61.25', '70'] },
        { header: 'S2 West', cells: ['55', '—'] },
      ],
    });
  });

  it('falls back to a table or record when a grid tool returns no grid (nothing to read across)', () => {
    expect(resultModel('get_results_summary', { term: 'Term 1', rows: [] }).view).toBe('record');
  });

  it('shows an empty list as an empty table', () => {
    expect(resultModel('list_departments', [])).toEqual({ view: 'table', columns: expect.any(Array), rows: [] });
  });
});

describe('cellText and fieldLabel', () => {
  it('reads values as a person would', () => {
    expect([cellText(null), cellText(''), cellText(false), cellText(3), cellText(99.14), cellText(60.71666), cellText([1, 2]), cellText([1]), cellText([])]).toEqual(
      ['—', '—', 'No', '3', '99.14', '60.72', '2 items', '1 item', 'None'],
    );
    expect(cellText([{ fullName: 'Amos' }, { fullName: 'Beth' }])).toBe('Amos, Beth');
    expect(cellText(['a', 'b', 'c', 'd', 'e'])).toBe('a, b, c and 2 more');
    expect(cellText({ id: DEPT, name: 'Term 1' })).toBe('Term 1');
    // An instant reads in the school's zone: 22:41 UTC on the 5th is already the 6th in Kampala; a calendar date stays.
    expect(cellText('2026-12-05T22:41:07.123Z', 'Africa/Kampala')).toBe(formatDateTime('2026-12-05T22:41:07.123Z', 'Africa/Kampala'));
    expect(cellText('2026-12-05T22:41:07.123Z', 'Africa/Kampala')).not.toBe(cellText('2026-12-05T22:41:07.123Z', 'UTC'));
    expect(cellText('2026-12-05')).toBe('2026-12-05');
    expect(fieldLabel('campusName')).toBe('Campus name');
    expect(fieldLabel('head_of_department')).toBe('Head of department');
  });
});
