/**
 * Campus mode: the envelope's campus wins over a model-supplied campusId. The payload is untrusted and
 * may be malformed; execute() refuses a malformed one before the service runs, so this only reads.
 */
export const pinnedCampusId = (payload: unknown): string | undefined => {
  const scope = (payload as { scope?: { mode?: unknown; campusId?: unknown } } | undefined)?.scope;
  return scope?.mode === 'campus' && typeof scope.campusId === 'string' ? scope.campusId : undefined;
};
