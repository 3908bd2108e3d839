import type { AgentSpeaker } from './agent-run.js';

/**
 * What the conversation routes (/agent/threads...) answer, as JSON: the server's controllers return these, the Hub and
 * the chat client read them. Times are ISO 8601 strings. GET /agent/map is AgentMap (agent-roster).
 */

export const AGENT_RUN_STATUSES = ['running', 'interrupted', 'finished', 'failed'] as const;
export type AgentRunStatus = (typeof AGENT_RUN_STATUSES)[number];

/** POST /agent/threads, and each row of GET /agent/threads. */
export type ThreadSummary = { id: string; title: string | null; createdAt: string; updatedAt: string };

/** What a client sees of a question: `confirm` marks a confirmation of one tool call, which only a yes approves. */
export type InterruptView = { interruptId: string; question: string; askedBy: AgentSpeaker; answered: boolean; confirm?: true };

export type RunSummary = {
  id: string;
  status: AgentRunStatus;
  message: string;
  campusId: string | null;
  targetSchoolId: string | null;
  interrupts: InterruptView[];
  error: string | null;
  lastSeq: number;
  createdAt: string;
  updatedAt: string;
};

/** GET /agent/threads/:id. */
export type ThreadDetail = ThreadSummary & { runs: RunSummary[] };

/** POST /agent/threads/:id/runs. */
export type StartRunResponse = { runId: string };

/** POST /agent/threads/:id/resume: the run resumes once every pending question is answered. */
export type ResumeResponse = { runId: string; resumed: boolean; pendingInterruptIds: string[] };
