import type { AgentToolRole } from '@naalya/agent-tools';

// Personas live only in copy: code, files and the task tool's subagent_type use the role.
export type SpecialistProfile = { persona: string; title: string; summary: string };

export const SPECIALIST_PROFILES: Record<AgentToolRole, SpecialistProfile> = {
  class_teacher: {
    persona: 'Angie',
    title: 'class teacher assistant',
    summary: "Works with the user's own classes as their class teacher: class lists, students and attendance registers.",
  },
  subject_teacher: {
    persona: 'Bean',
    title: 'subject teacher assistant',
    summary: 'Works with the subjects and classes the user teaches: gradebooks, marks and lesson plans.',
  },
  dos: {
    persona: 'Sarah',
    title: 'director of studies assistant',
    summary: 'Works on academic oversight: lesson plans waiting for approval, teaching assignments and results.',
  },
};
