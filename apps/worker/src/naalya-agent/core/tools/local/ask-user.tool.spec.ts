import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { askUserArgsHash, createAskUserTool } from './ask-user.tool.js';

describe('ask_user', () => {
  it('argsHash is the sha256 of the canonical JSON of its arguments', () => {
    expect(askUserArgsHash({ question: 'Which class?' })).toBe(createHash('sha256').update('{"question":"Which class?"}').digest('hex'));
  });

  it('is one tool per asker with the same name, so a specialist question is stamped with its role', () => {
    expect(createAskUserTool('dos').name).toBe('ask_user');
    expect(createAskUserTool('rover').description).not.toContain('\u2014');
  });
});
