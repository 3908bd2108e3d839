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
  er7: 'the 7-statement ideal read (the statements before issue 25)',
  ew10: 'the 10-statement ideal write (the statements before issue 25)',
};

/**
 * The cluster run's second setting (`npm run bench -- --cluster`): (a) to (e) again on three RabbitMQ nodes with quorum
 * queues, the server's and the ideal's database connections through PgBouncer (transaction pooling).
 */
export const CLUSTER_VARIANTS = {
  qa: 'as (a), on the 3-node cluster (quorum queues)',
  qb: 'as (b), on the 3-node cluster (quorum queues)',
  qc: 'as (c), on the cluster, database through PgBouncer',
  qd: 'as (d), on the cluster, database through PgBouncer',
  qer: 'as (e) for (c), on the cluster, database through PgBouncer',
  qew: 'as (e) for (d), on the cluster, database through PgBouncer',
};
const describe = (variant) => VARIANTS[variant] ?? CLUSTER_VARIANTS[variant];

const TAGS = { er7: '(e7)', ew10: '(e10)', a0: '(a₀)', bt: '(b′)', cm: '(c mem)', dm: '(d mem)', er: '(e)', ew: '(e)', qa: '(a q)', qb: '(b q)', qc: '(c q)', qd: '(d q)', qer: '(e q)', qew: '(e q)' };
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

/** [numerator, denominator, label (default: their tags)]: the ratios a run reports. */
const PAIRS = [
  ['a', 'a0'],
  ['b', 'a'],
  ['bt', 'a'],
  ['c', 'er'],
  ['d', 'ew'],
  // Against the ideal pipelines of the statements before issue 25: what the fewer round trips bought.
  ['c', 'er7'],
  ['d', 'ew10'],
  // The shared quota count (PostgreSQL, every replica) against the in-memory one, same server build, same run.
  ['c', 'cm'],
  ['d', 'dm'],
];

/** The cluster run's: the same ratios in each setting, then each variant on the cluster over itself on the single node. */
export const CLUSTER_PAIRS = [
  ['b', 'a'],
  ['c', 'er'],
  ['d', 'ew'],
  ['qb', 'qa'],
  ['qc', 'qer'],
  ['qd', 'qew'],
  ['qa', 'a'],
  ['qb', 'b'],
  ['qc', 'c'],
  ['qd', 'd'],
  ['qer', 'er', '(e q)/(e) read'],
  ['qew', 'ew', '(e q)/(e) write'],
];

/** Ratios within each round (adjacent phases), then the median over rounds. */
export const ratios = (phases, concurrencies, pairs = PAIRS) => {
  const out = [];
  for (const [num, den, label] of pairs) {
    for (const concurrency of concurrencies) {
      const perRound = [];
      for (const p of phases.filter((x) => x.variant === num && x.concurrency === concurrency)) {
        const q = phases.find((x) => x.variant === den && x.concurrency === concurrency && x.round === p.round);
        if (q) perRound.push({ p50: p.p50 / q.p50, throughput: p.callsPerSec / q.callsPerSec, serverCpu: p.cpu.server / q.cpu.server });
      }
      if (perRound.length === 0) continue;
      out.push({
        pair: label ?? `${tag(num)}/${tag(den)}`,
        num,
        den,
        concurrency,
        p50: median(perRound.map((r) => r.p50)),
        p50s: perRound.map((r) => r.p50),
        throughput: median(perRound.map((r) => r.throughput)),
        throughputs: perRound.map((r) => r.throughput),
        // The numerator's server CPU per call over the denominator's, per round: for (c)/(e) and (d)/(e), what the server's
        // code costs around the same statements (the ideal runs nothing else).
        serverCpu: median(perRound.map((r) => r.serverCpu)),
        serverCpus: perRound.map((r) => r.serverCpu),
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
    check('(c) calls/s at c64 ≥ 0.8× (e)', find('(c)/(e)', 64), 'throughput', '>=', 0.8),
    check('(d) calls/s at c64 ≥ 0.8× (e)', find('(d)/(e)', 64), 'throughput', '>=', 0.8),
    check('(c) p50 at c1 ≤ 1.25× (e)', find('(c)/(e)', 1), 'p50', '<=', 1.25),
    check('(d) p50 at c1 ≤ 1.25× (e)', find('(d)/(e)', 1), 'p50', '<=', 1.25),
    check('(c) calls/s at c64 ≥ 1.1× (e7): 4 statements against the 7-statement ideal', find('(c)/(e7)', 64), 'throughput', '>=', 1.1),
    check('(d) calls/s at c64 ≥ 1.1× (e10): 6 statements against the 10-statement ideal', find('(d)/(e10)', 64), 'throughput', '>=', 1.1),
    check('(c) p50 at c1 ≤ 1× (e7)', find('(c)/(e7)', 1), 'p50', '<=', 1),
    check('(d) p50 at c1 ≤ 1× (e10)', find('(d)/(e10)', 1), 'p50', '<=', 1),
    check('(c) server CPU per call at c64 ≤ 1.3× (e), tracing off', find('(c)/(e)', 64), 'serverCpu', '<=', 1.3),
    check('(d) server CPU per call at c64 ≤ 1.3× (e), tracing off (not a target)', find('(d)/(e)', 64), 'serverCpu', '<=', 1.3),
    check('(c) calls/s at c64 ≥ 0.95× (c mem): shared quota count', find('(c)/(c mem)', 64), 'throughput', '>=', 0.95),
    check('(d) calls/s at c64 ≥ 0.95× (d mem): shared quota count', find('(d)/(d mem)', 64), 'throughput', '>=', 0.95),
  ];
};

/** The 1-minute load average before, during (after each round's phase) and after a run. */
const loadLine = (meta) => {
  const loads = meta.loadDuring.map((l) => l.load);
  const first = (line) => line.split(' ')[0];
  return `Load average (1 min) on the ${meta.cpus} cores: ${first(meta.loadBefore)} at the start, ${first(meta.loadBeforePhases)} before the phases, ${fmt(Math.min(...loads))}–${fmt(Math.max(...loads))} during (after each round's phase), ${first(meta.loadAfter)} after.`;
};

export const markdown = ({ rows, ratioRows, targetRows, statements, meta }) => {
  const lines = [];
  lines.push(`Run ${meta.startedAt} · ${meta.mode} · ${meta.rounds} round(s) × ${meta.phaseMs} ms per phase in ${meta.slices ?? 1} interleaved slice(s) · prefetch ${meta.prefetch} · pool ${meta.poolSize} · ${meta.cpus} CPUs · load before ${meta.loadBefore}`);
  lines.push('');
  lines.push(loadLine(meta), '', meta.noise.text, '');
  lines.push('| variant | conc | p50 ms | p99 ms | calls/s | CPU µs/call client / server / broker / db | stmts/call | server RSS MB | errors |');
  lines.push('|---|---|---|---|---|---|---|---|---|');
  for (const row of rows) {
    const stmts = statements?.[row.variant];
    lines.push(
      `| ${tag(row.variant)} ${describe(row.variant)} | ${row.concurrency} | ${fmt(row.p50)}${range(row.p50s, 2)} | ${fmt(row.p99)} | ${fmt(row.callsPerSec, 0)}${range(row.callsPerSecs, 0)} | ${fmt(row.cpu.client, 0)} / ${fmt(row.cpu.server, 0)} / ${fmt(row.cpu.broker, 0)} / ${fmt(row.cpu.db, 0)} | ${stmts === undefined ? '–' : fmt(stmts, 1)} | ${fmt(row.rssMb, 0)} | ${row.errors} |`,
    );
  }
  lines.push('');
  lines.push('| ratio | conc | p50 ratio (lower is better) | calls/s ratio (higher is better) | server CPU per call ratio |');
  lines.push('|---|---|---|---|---|');
  for (const r of ratioRows) {
    lines.push(`| ${r.pair} | ${r.concurrency} | ${fmt(r.p50)}${range(r.p50s, 2)} | ${fmt(r.throughput)}${range(r.throughputs, 2)} | ${fmt(r.serverCpu)}${range(r.serverCpus, 2)} |`);
  }
  lines.push('');
  lines.push('| target | measured | met |');
  lines.push('|---|---|---|');
  // A noisy run's figures neither meet nor miss a target (lib/noise.mjs).
  const verdict = (t) => (t.met === null ? '–' : `${t.met ? 'yes' : 'no'}${meta.noise.noisy ? ' (too noisy to judge)' : ''}`);
  for (const t of targetRows) lines.push(`| ${t.label} | ${fmt(t.value)} | ${verdict(t)} |`);
  return lines.join('\n');
};

const SHORT = { a: '(a) raw amqplib', b: '(b) the hop', c: '(c) read', d: '(d) audited write', er: '(e) ideal read', ew: '(e) ideal write' };
const SETTINGS = [
  ['single node', ''],
  ['cluster + PgBouncer', 'q'],
];

/**
 * The cluster run's summary: per setting the ratios (b)/(a) (p50, calls/s), (c)/(e) and (d)/(e) (calls/s); the
 * absolute p50 and calls/s; each variant on the cluster over itself on the single node; medians of the rounds with
 * their (min–max); the load before, during and after.
 */
export const clusterMarkdown = ({ rows, ratioRows, meta, statements }) => {
  const concurrencies = meta.concurrencies;
  const ratio = (num, den, concurrency) => ratioRows.find((r) => r.num === num && r.den === den && r.concurrency === concurrency);
  const row = (variant, concurrency) => rows.find((r) => r.variant === variant && r.concurrency === concurrency);
  const cell = (value, values, digits) => (value === undefined ? '–' : `${fmt(value, digits)}${range(values ?? [], digits)}`);
  const p = meta.placement;
  const lines = [];
  lines.push(
    `Run ${meta.startedAt} · ${meta.rounds} round(s) × ${meta.phaseMs} ms per phase in ${meta.slices} interleaved slices, both settings' variants interleaved in the same rounds · prefetch ${meta.prefetch} · database pool ${meta.poolSize} · ${meta.cpus} CPUs`,
  );
  lines.push('');
  lines.push(loadLine(meta), '', meta.noise.text);
  lines.push('');
  lines.push(
    `**Single node**: the machine's RabbitMQ node (classic queues), PostgreSQL direct. **Cluster + PgBouncer**: three RabbitMQ nodes, quorum queues (${p.members} members) all led by node ${p.leaderNode}; the servers (the project's and the bench's) consume on node ${p.serverNode}, every caller calls from node ${p.callerNode}${p.spread ? ', so a call crosses the cluster at every step' : ` (the server landed on the leader's node in 5 starts: not spread)`}; the project's processes are given the node list; the server's and the ideal's database connections go through PgBouncer (${p.pgbouncer.poolMode} pooling, ${p.pgbouncer.poolSize} server connections), the server's LISTEN direct. Statements per call: read ${fmt(statements.c, 1)}, audited write ${fmt(statements.d, 1)}; the ideal issues the same: read ${statements.match.read}, write ${statements.match.write}.`,
  );
  lines.push('');
  lines.push('Ratios per setting (median of rounds, min–max; each ratio taken within a round):');
  lines.push('');
  lines.push('| setting | conc | (b)/(a) p50 (lower is better) | (b)/(a) calls/s | (c)/(e) calls/s | (d)/(e) calls/s |');
  lines.push('|---|---|---|---|---|---|');
  for (const [setting, key] of SETTINGS) {
    for (const concurrency of concurrencies) {
      const hop = ratio(`${key}b`, `${key}a`, concurrency);
      const read = ratio(`${key}c`, `${key}er`, concurrency);
      const write = ratio(`${key}d`, `${key}ew`, concurrency);
      lines.push(
        `| ${setting} | ${concurrency} | ${cell(hop?.p50, hop?.p50s, 2)} | ${cell(hop?.throughput, hop?.throughputs, 2)} | ${cell(read?.throughput, read?.throughputs, 2)} | ${cell(write?.throughput, write?.throughputs, 2)} |`,
      );
    }
  }
  lines.push('');
  lines.push('Absolute (median of rounds, min–max):');
  lines.push('');
  lines.push(`| variant | setting | ${concurrencies.map((c) => `c${c} p50 ms | c${c} calls/s`).join(' | ')} |`);
  lines.push(`|---|---|${concurrencies.map(() => '---|---|').join('')}`);
  for (const variant of Object.keys(SHORT)) {
    for (const [setting, key] of SETTINGS) {
      const cells = concurrencies.map((concurrency) => {
        const r = row(`${key}${variant}`, concurrency);
        return `${cell(r?.p50, r?.p50s, 2)} | ${cell(r?.callsPerSec, r?.callsPerSecs, 0)}`;
      });
      lines.push(`| ${SHORT[variant]} | ${setting} | ${cells.join(' | ')} |`);
    }
  }
  lines.push('');
  lines.push('What the cluster and PgBouncer cost: each variant on the cluster over itself on the single node, within each round:');
  lines.push('');
  lines.push(`| variant | ${concurrencies.map((c) => `c${c} p50 cluster/single | c${c} calls/s cluster/single`).join(' | ')} |`);
  lines.push(`|---|${concurrencies.map(() => '---|---|').join('')}`);
  for (const variant of Object.keys(SHORT)) {
    const cells = concurrencies.map((concurrency) => {
      const r = ratio(`q${variant}`, variant, concurrency);
      return `${cell(r?.p50, r?.p50s, 2)} | ${cell(r?.throughput, r?.throughputs, 2)}`;
    });
    lines.push(`| ${SHORT[variant]} | ${cells.join(' | ')} |`);
  }
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
