import { describe, expect, it } from 'vitest';
import { appsHref, parseRoute } from './route';

describe('the connected apps route', () => {
  it('opens the connected apps page at #/apps, and anything unknown still opens the chat', () => {
    expect(parseRoute(appsHref())).toEqual({ page: 'apps' });
    expect(parseRoute('#/apps/')).toEqual({ page: 'apps' });
    expect(parseRoute('#/applications')).toEqual({ page: 'chat', threadId: null });
  });
});
