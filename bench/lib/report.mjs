// Aggregation (median of rounds), ratios measured within each round, and the three outputs: JSON, markdown, SVG.
export const VARIANTS = {
  a0: 'raw amqplib echo, default exchange (not the project route)',
  a: 'raw amqplib echo (transport baseline)',
  b: 'AckAfterReplyTransport + worker proxy, echo',
  bt: 'AckAfterReplyTransport, raw amqplib caller, echo',
  c: 'list_departments through execute()',
  d: 'create_department through execute() (audited)',
  cm: 'as (c), quota counted in server memory (one replica only)',
  dm: 'as (d), quota counted in server memory (one replica only)',
  er: 'ideal for (c): raw amqplib + pg, the same statements',
  ew: 'ideal for (d): raw amqplib + pg, the same statements',
};

const TAGS = { a0: '(a₀)', bt: '(b′)', cm: '(c mem)', dm: '(d mem)', er: '(e)', ew: '(e)' };
export const tag = (variant) => TAGS[variant] ?? `(${variant})`;

export const median = (values) => {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((x, y) => x - y);
  if (sorted.length === 0) return NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

const fmt = (value, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : '–');
const range = (values, digits) => {
  const finite = values.filter(Number.isFinite);
  return finite.length > 1 ? ` (${fmt(Math.min(...finite), digits)}–${fmt(Math.max(...finite), digits)})` : '';
};

/** phases: [{ round, variant, concurrency, p50, p99, callsPerSec, cpu: {client, server, broker, db}, rssMb, errors }] */
export const aggregate = (phases, concurrencies, variants) => {
  const rows = [];
  for (const variant of variants) {
    for (const concurrency of concurrencies) {
      const runs = phases.filter((p) => p.variant === variant && p.concurrency === concurrency);
      if (runs.length === 0) continue;
      const pick = (f) => runs.map(f);
      rows.push({
        variant,
        concurrency,
        rounds: runs.length,
        p50: median(pick((r) => r.p50)),
        p50s: pick((r) => r.p50),
        p99: median(pick((r) => r.p99)),
        callsPerSec: median(pick((r) => r.callsPerSec)),
        callsPerSecs: pick((r) => r.callsPerSec),
        cpu: {
          client: median(pick((r) => r.cpu.client)),
          server: median(pick((r) => r.cpu.server)),
          broker: median(pick((r) => r.cpu.broker)),
          db: median(pick((r) => r.cpu.db)),
        },
        rssMb: median(pick((r) => r.rssMb)),
        errors: runs.reduce((sum, r) => sum + r.errors, 0),
      });
    }
  }
  return rows;
};

/** Ratios within each round (adjacent phases), then the median over rounds. */
export const ratios = (phases, concurrencies) => {
  const pairs = [
    ['a', 'a0'],
    ['b', 'a'],
    ['bt', 'a'],
    ['c', 'er'],
    ['d', 'ew'],
    // The shared quota count (PostgreSQL, every replica) against the in-memory one, same server build, same run.
    ['c', 'cm'],
    ['d', 'dm'],
  ];
  const out = [];
  for (const [num, den] of pairs) {
    for (const concurrency of concurrencies) {
      const perRound = [];
      for (const p of phases.filter((x) => x.variant === num && x.concurrency === concurrency)) {
        const q = phases.find((x) => x.variant === den && x.concurrency === concurrency && x.round === p.round);
        if (q) perRound.push({ p50: p.p50 / q.p50, throughput: p.callsPerSec / q.callsPerSec });
      }
      if (perRound.length === 0) continue;
      out.push({
        pair: `${tag(num)}/${tag(den)}`,
        concurrency,
        p50: median(perRound.map((r) => r.p50)),
        p50s: perRound.map((r) => r.p50),
        throughput: median(perRound.map((r) => r.throughput)),
        throughputs: perRound.map((r) => r.throughput),
      });
    }
  }
  return out;
};

export const targets = (ratioRows) => {
  const find = (pair, concurrency) => ratioRows.find((r) => r.pair === pair && r.concurrency === concurrency);
  const check = (label, row, key, op, limit) => {
    const value = row?.[key];
    return { label, value, limit, met: Number.isFinite(value) ? (op === '<=' ? value <= limit : value >= limit) : null };
  };
  return [
    check('(b) p50 at c1 ≤ 1.2× (a)', find('(b)/(a)', 1), 'p50', '<=', 1.2),
    check('(b) calls/s at c64 ≥ 0.9× (a)', find('(b)/(a)', 64), 'throughput', '>=', 0.9),
    check('(b′) p50 at c1 ≤ 1.2× (a), transport alone (not a target)', find('(b′)/(a)', 1), 'p50', '<=', 1.2),
    check('(b′) calls/s at c64 ≥ 0.9× (a), transport alone (not a target)', find('(b′)/(a)', 64), 'throughput', '>=', 0.9),
    check('(c) calls/s at c64 ≥ 0.7× (e)', find('(c)/(e)', 64), 'throughput', '>=', 0.7),
    check('(d) calls/s at c64 ≥ 0.7× (e)', find('(d)/(e)', 64), 'throughput', '>=', 0.7),
    check('(c) p50 at c1 ≤ 1.3× (e)', find('(c)/(e)', 1), 'p50', '<=', 1.3),
    check('(d) p50 at c1 ≤ 1.3× (e)', find('(d)/(e)', 1), 'p50', '<=', 1.3),
    check('(c) calls/s at c64 ≥ 0.95× (c mem): shared quota count', find('(c)/(c mem)', 64), 'throughput', '>=', 0.95),
    check('(d) calls/s at c64 ≥ 0.95× (d mem): shared quota count', find('(d)/(d mem)', 64), 'throughput', '>=', 0.95),
  ];
};

export const markdown = ({ rows, ratioRows, targetRows, statements, meta }) => {
  const lines = [];
  lines.push(`Run ${meta.startedAt} · ${meta.mode} · ${meta.rounds} round(s) × ${meta.phaseMs} ms per phase in ${meta.slices ?? 1} interleaved slice(s) · prefetch ${meta.prefetch} · pool ${meta.poolSize} · ${meta.cpus} CPUs · load before ${meta.loadBefore}`);
  lines.push('');
  lines.push('| variant | conc | p50 ms | p99 ms | calls/s | CPU µs/call client / server / broker / db | stmts/call | server RSS MB | errors |');
  lines.push('|---|---|---|---|---|---|---|---|---|');
  for (const row of rows) {
    const stmts = statements?.[row.variant];
    lines.push(
      `| ${tag(row.variant)} ${VARIANTS[row.variant]} | ${row.concurrency} | ${fmt(row.p50)}${range(row.p50s, 2)} | ${fmt(row.p99)} | ${fmt(row.callsPerSec, 0)}${range(row.callsPerSecs, 0)} | ${fmt(row.cpu.client, 0)} / ${fmt(row.cpu.server, 0)} / ${fmt(row.cpu.broker, 0)} / ${fmt(row.cpu.db, 0)} | ${stmts === undefined ? '–' : fmt(stmts, 1)} | ${fmt(row.rssMb, 0)} | ${row.errors} |`,
    );
  }
  lines.push('');
  lines.push('| ratio | conc | p50 ratio (lower is better) | calls/s ratio (higher is better) |');
  lines.push('|---|---|---|---|');
  for (const r of ratioRows) lines.push(`| ${r.pair} | ${r.concurrency} | ${fmt(r.p50)}${range(r.p50s, 2)} | ${fmt(r.throughput)}${range(r.throughputs, 2)} |`);
  lines.push('');
  lines.push('| target | measured | met |');
  lines.push('|---|---|---|');
  for (const t of targetRows) lines.push(`| ${t.label} | ${fmt(t.value)} | ${t.met === null ? '–' : t.met ? 'yes' : 'no'} |`);
  return lines.join('\n');
};

const escapeXml = (text) => String(text).replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c]);

/** Two panels, hand-written SVG: calls/s by concurrency (log x), p50 latency by concurrency. */
export const svgChart = ({ rows, concurrencies, variants, title }) => {
  const colors = { a0: '#9c755f', a: '#4e79a7', b: '#f28e2b', bt: '#edc948', c: '#59a14f', d: '#e15759', cm: '#8cd17d', dm: '#ff9d9a', er: '#76b7b2', ew: '#b07aa1' };
  const width = 980;
  const height = 420;
  const panel = { w: 400, h: 300, top: 60 };
  const lefts = [70, 560];
  const xOf = (i, left) => left + (i * panel.w) / Math.max(1, concurrencies.length - 1);
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${width / 2}" y="24" text-anchor="middle" font-size="15">${escapeXml(title)}</text>`,
  ];
  const panels = [
    { key: 'callsPerSec', label: 'calls/s (median of rounds)', left: lefts[0] },
    { key: 'p50', label: 'p50 latency, ms', left: lefts[1] },
  ];
  for (const { key, label, left } of panels) {
    const values = rows.map((r) => r[key]).filter(Number.isFinite);
    const max = Math.max(1e-9, ...values) * 1.1;
    const yOf = (v) => panel.top + panel.h - (v / max) * panel.h;
    parts.push(`<text x="${left + panel.w / 2}" y="${panel.top - 12}" text-anchor="middle">${escapeXml(label)}</text>`);
    parts.push(`<line x1="${left}" y1="${panel.top + panel.h}" x2="${left + panel.w}" y2="${panel.top + panel.h}" stroke="#333"/>`);
    parts.push(`<line x1="${left}" y1="${panel.top}" x2="${left}" y2="${panel.top + panel.h}" stroke="#333"/>`);
    for (let t = 0; t <= 4; t++) {
      const v = (max * t) / 4;
      const y = yOf(v);
      parts.push(`<line x1="${left - 4}" y1="${y}" x2="${left + panel.w}" y2="${y}" stroke="#eee"/>`);
      parts.push(`<text x="${left - 6}" y="${y + 4}" text-anchor="end">${v >= 100 ? v.toFixed(0) : v.toFixed(2)}</text>`);
    }
    concurrencies.forEach((c, i) => parts.push(`<text x="${xOf(i, left)}" y="${panel.top + panel.h + 16}" text-anchor="middle">c${c}</text>`));
    for (const variant of variants) {
      const points = concurrencies
        .map((c, i) => [i, rows.find((r) => r.variant === variant && r.concurrency === c)?.[key]])
        .filter(([, v]) => Number.isFinite(v))
        .map(([i, v]) => `${xOf(i, left).toFixed(1)},${yOf(v).toFixed(1)}`);
      if (points.length === 0) continue;
      parts.push(`<polyline fill="none" stroke="${colors[variant]}" stroke-width="2" points="${points.join(' ')}"/>`);
      for (const point of points) {
        const [x, y] = point.split(',');
        parts.push(`<circle cx="${x}" cy="${y}" r="3" fill="${colors[variant]}"/>`);
      }
    }
  }
  variants.forEach((variant, i) => {
    const x = 10 + i * 138;
    parts.push(`<rect x="${x}" y="${height - 30}" width="12" height="12" fill="${colors[variant]}"/>`);
    parts.push(`<text x="${x + 16}" y="${height - 20}">${tag(variant)} ${escapeXml(VARIANTS[variant].slice(0, 16))}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
};
