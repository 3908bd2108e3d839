import { CopyId } from './CopyId';
import { JsonToggle } from './JsonToggle';
import { resultModel, type GridModel, type IdRef, type RecordModel, type TableModel } from '../lib/result-view';
import { useSchool } from '../lib/school-context';

/**
 * Ids one click away: the thing's own id (its `id`, else the first) behind a copy button, and every id in a disclosure (keyboard-
 * reachable, announced as expandable), each selectable.
 */
const Ids = ({ ids, label }: { ids: IdRef[]; label: string }) => {
  const own = ids.find((id) => id.key === 'id') ?? ids[0];
  return own ? (
    <div className="flex flex-wrap items-start gap-x-2 gap-y-1">
      <CopyId id={own.value} name={label} />
    <details className="text-xs" data-testid="result-ids">
      <summary className="cursor-pointer text-sky-800 underline" aria-label={`Ids of ${label}`}>
        Ids
      </summary>
      <dl className="mt-1 space-y-0.5">
        {ids.map((id) => (
          <div key={id.key} className="flex flex-wrap gap-x-1">
            <dt className="text-slate-600">{id.resource}:</dt>
            <dd>
              <code className="break-all select-all">{id.value}</code>
            </dd>
          </div>
        ))}
      </dl>
    </details>
    </div>
  ) : null;
};

/**
 * A list as a table. Below the `sm` breakpoint each row stacks into a block of label/value lines (the header is then
 * read from each cell's data-label), so a phone never scrolls the page sideways to read a column.
 */
const TableResult = ({ model, label }: { model: TableModel; label: string }) => {
  if (!model.rows.length) return <p data-testid="result-empty">Nothing to show.</p>;
  const hasIds = model.rows.some((row) => row.ids.length);
  return (
    <table className="result-table w-full border-collapse text-left text-sm" data-testid="result-table">
      <caption className="sr-only">{label}</caption>
      <thead>
        <tr>
          {model.columns.map((column) => (
            <th key={column.key} scope="col" className="border-b border-slate-200 px-2 py-1 font-semibold">
              {column.label}
            </th>
          ))}
          {hasIds ? (
            <th scope="col" className="border-b border-slate-200 px-2 py-1 font-semibold">
              Details
            </th>
          ) : null}
        </tr>
      </thead>
      <tbody>
        {model.rows.map((row, index) => (
          <tr key={row.ids[0]?.value ?? index} className="border-b border-slate-100 align-top">
            {row.cells.map((cell, column) =>
              column === 0 ? (
                <th key={cell.key} scope="row" data-label={cell.label} className="px-2 py-1 font-medium break-words">
                  {cell.text}
                </th>
              ) : (
                <td key={cell.key} data-label={cell.label} className="px-2 py-1 break-words">
                  {cell.text}
                </td>
              ),
            )}
            {hasIds ? (
              <td data-label="Details" className="px-2 py-1">
                <Ids ids={row.ids} label={row.cells[0]?.text ?? `row ${index + 1}`} />
              </td>
            ) : null}
          </tr>
        ))}
      </tbody>
    </table>
  );
};

/** One thing as a short card: its name as the heading, then its fields as a description list. */
const RecordResult = ({ model }: { model: RecordModel }) => (
  <div className="rounded border border-slate-200 p-2" data-testid="result-record">
    {model.title ? <p className="font-semibold">{model.title}</p> : null}
    <dl className="grid grid-cols-1 gap-x-3 gap-y-0.5 sm:grid-cols-[max-content_1fr]">
      {model.entries.map((entry) => (
        <div key={entry.key} className="contents">
          <dt className="text-slate-600">{entry.label}</dt>
          <dd className="break-words max-sm:mb-1">{entry.text}</dd>
        </div>
      ))}
    </dl>
    <Ids ids={model.ids} label={model.title ?? 'this record'} />
  </div>
);

/**
 * A matrix (students by subjects) read across. A mark sheet cannot stack without losing what it is, so the grid alone
 * scrolls inside its own focusable region (keyboard users scroll it with the arrow keys); the page never does.
 */
const GridResult = ({ model, label }: { model: GridModel; label: string }) => (
  <div className="max-w-full overflow-x-auto" role="region" aria-label={`${label}: grid`} tabIndex={0} data-testid="result-grid">
    <table className="border-collapse text-left text-sm">
      <caption className="text-left text-xs text-slate-600">{model.caption ?? label}</caption>
      <thead>
        <tr>
          <th scope="col" className="border-b border-slate-200 px-2 py-1">
            {model.rowHeader}
          </th>
          {model.columns.map((column) => (
            <th key={column} scope="col" className="border-b border-slate-200 px-2 py-1">
              {column}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {model.rows.map((row) => (
          <tr key={row.header} className="border-b border-slate-100">
            <th scope="row" className="px-2 py-1 font-medium whitespace-nowrap">
              {row.header}
            </th>
            {row.cells.map((cell, index) => (
              <td key={model.columns[index]} className="px-2 py-1 text-right tabular-nums">
                {cell}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  </div>
);

/** A tool's result laid out for a person from its definition, with the JSON it came as one toggle away. */
export const ResultView = ({ toolName, data, label }: { toolName: string; data: unknown; label: string }) => {
  const model = resultModel(toolName, data, useSchool().timeZone);
  return (
    <div className="space-y-2" data-view={model.view}>
      {model.view === 'table' ? <TableResult model={model} label={label} /> : null}
      {model.view === 'record' ? <RecordResult model={model} /> : null}
      {model.view === 'grid' ? <GridResult model={model} label={label} /> : null}
      {model.view === 'text' ? <p className="break-words whitespace-pre-wrap">{model.text}</p> : null}
      <JsonToggle data={data} />
    </div>
  );
};
