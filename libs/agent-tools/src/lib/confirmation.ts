/** What the Hub's buttons send to answer a confirmation. */
export const CONFIRMATION_ANSWERS = { approve: 'yes', decline: 'no' } as const;

// A closed list, not a guess at intent: anything else (including "yes, but ...") declines, so an ambiguous answer
// never approves a change.
const APPROVING_ANSWERS: ReadonlySet<string> = new Set(['yes', 'y', 'approve', 'approved', 'confirm', 'confirmed', 'ok', 'okay', 'go ahead', 'yes go ahead']);

/**
 * True when an answer to a confirmation approves it. The worker's proxy (run it or not) and the server's resume
 * (record an approval or not) both decide with this one function, so they cannot disagree about an answer.
 */
export const isApprovalAnswer = (answer: string): boolean =>
  APPROVING_ANSWERS.has(
    answer
      .trim()
      .toLowerCase()
      .replace(/[.!,]/g, '')
      .replace(/\s+/g, ' '),
  );
