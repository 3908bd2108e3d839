/** What the question before assign_subject_teacher names: the class, subject and teachers as the caller may see them. */
export type SubjectTeacherAssignmentFacts = { teacherName: string; subjectName: string; className: string; currentTeacherName: string | null; alreadyTeaches: boolean };

/** The question a person answers before assign_subject_teacher runs. */
export const subjectTeacherAssignmentQuestion = (facts: SubjectTeacherAssignmentFacts): string => {
  const ask = `Make ${facts.teacherName} the ${facts.subjectName} teacher of ${facts.className}?`;
  if (facts.alreadyTeaches) return `${ask} ${facts.teacherName} already teaches it there, so nothing changes.`;
  if (!facts.currentTeacherName) return `${ask} Nobody teaches it there now; ${facts.teacherName} starts teaching it.`;
  return `${ask} ${facts.currentTeacherName} teaches it there now and will no longer.`;
};
