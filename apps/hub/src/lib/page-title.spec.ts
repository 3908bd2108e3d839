import { describe, expect, it } from 'vitest';
import { pageTitle } from './page-title';

describe('the page title', () => {
  it('says where you are', () => {
    expect(pageTitle('Chat')).toBe('Chat · Naalya Hub');
    expect(pageTitle('Term plans · Chat')).toBe('Term plans · Chat · Naalya Hub');
  });

  it('leads with what arrived unseen in a background tab, counted, the newest kind named', () => {
    expect(pageTitle('Chat', { count: 1, latest: 'answer' })).toBe('(1) New answer · Chat · Naalya Hub');
    expect(pageTitle('Chat', { count: 2, latest: 'question' })).toBe('(2) Question waiting · Chat · Naalya Hub');
  });
});
