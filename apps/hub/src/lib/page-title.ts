import { useCallback, useEffect, useState } from 'react';

export const APP_NAME = 'Naalya Hub';

/** What arrived while the tab was in the background: the newest kind leads the title. */
export type Unseen = { count: number; latest: 'answer' | 'question' } | null;

const UNSEEN_TEXT = { answer: 'New answer', question: 'Question waiting' } as const;

/** "Chat · Naalya Hub", or "(2) Question waiting · Chat · Naalya Hub" when two things arrived unseen. */
export const pageTitle = (place: string, unseen: Unseen = null): string =>
  [unseen ? `(${unseen.count}) ${UNSEEN_TEXT[unseen.latest]}` : null, place, APP_NAME].filter(Boolean).join(' · ');

/** Sets the tab's title; `null` leaves it to a page below (the chat sets its own, with what arrived unseen). */
export const usePageTitle = (place: string | null, unseen: Unseen = null) => {
  const title = place === null ? null : pageTitle(place, unseen);
  useEffect(() => {
    if (title !== null) document.title = title;
  }, [title]);
};

/**
 * Counts what arrives while the tab is hidden (`notice` is called for each new answer or question); the count clears
 * when the tab is looked at again.
 */
export const useUnseen = (): { unseen: Unseen; notice: (kind: 'answer' | 'question') => void } => {
  const [unseen, setUnseen] = useState<Unseen>(null);
  useEffect(() => {
    const onVisibility = () => {
      if (document.visibilityState === 'visible') setUnseen(null);
    };
    document.addEventListener('visibilitychange', onVisibility);
    return () => document.removeEventListener('visibilitychange', onVisibility);
  }, []);
  const notice = useCallback((kind: 'answer' | 'question') => {
    if (document.visibilityState !== 'hidden') return;
    setUnseen((before) => ({ count: (before?.count ?? 0) + 1, latest: kind }));
  }, []);
  return { unseen, notice };
};
