import { ToolMessage } from '@langchain/core/messages';
import { describe, expect, it, vi } from 'vitest';
import { CONTEXT_MISSING_ERROR } from '../tool-context.js';
import { campusContext, schoolContext } from '../tool-context.fixture.js';
import { agentMapTool } from './agent-map.tool.js';

vi.mock('@naalya/agent-tools', async (importOriginal) => {
  const { withProbeTools } = await import('../../../testing/probe-registry.fixture.js');
  return withProbeTools(await importOriginal());
});

const mapFor = async (context: unknown) => {
  const output: unknown = await agentMapTool.invoke({ id: 'tc-map', name: 'get_agent_map', args: {}, type: 'tool_call' }, { context, toolCallId: 'tc-map' });
  if (!ToolMessage.isInstance(output)) throw new Error('expected a ToolMessage');
  return JSON.parse(String(output.content)) as Record<string, unknown>;
};

describe('get_agent_map', () => {
  it('shows the eligible specialists with their persona and belt, and the permissions for display only', async () => {
    const map = await mapFor({ ...schoolContext(), capabilities: { isClassTeacher: true, isSubjectTeacher: false, isDirectorOfStudies: true } });

    expect(map['specialists']).toEqual([
      expect.objectContaining({ role: 'class_teacher', name: 'Angie', tools: ['list_my_classes', 'list_class_students', 'record_attendance', 'get_branding'] }),
      expect.objectContaining({ role: 'dos', name: 'Sarah', tools: ['list_pending_lesson_plans', 'approve_lesson_plan', 'get_branding'] }),
    ]);
    expect(map['rover']).toEqual({ tools: expect.arrayContaining(['list_staff', 'get_branding']) });
    expect(map['permissions']).toEqual(['list Staff']);
  });

  it('follows the run mode', async () => {
    const map = await mapFor({ ...campusContext(), capabilities: { isClassTeacher: false, isSubjectTeacher: false, isDirectorOfStudies: true } });
    expect(map['mode']).toBe('campus (Kisasi)');
    expect(map['specialists']).toEqual([expect.objectContaining({ role: 'dos', tools: ['list_pending_lesson_plans', 'get_branding'] })]);
  });

  it('without a trusted context answers CONTEXT_MISSING_ERROR', async () => {
    expect(await mapFor(undefined)).toEqual({ error: CONTEXT_MISSING_ERROR, code: 'CONTEXT_MISSING' });
  });
});
