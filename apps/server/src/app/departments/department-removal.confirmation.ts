/** What the question before delete_department names: the department as the caller may see it. */
export type DepartmentRemovalFacts = { name: string; campusName: string | null; headName: string | null; memberCount: number };

const membersCopy = (count: number): string => (count === 0 ? 'no members' : count === 1 ? '1 member' : `${count} members`);

/** The question a person answers before delete_department runs. */
export const departmentRemovalQuestion = (facts: DepartmentRemovalFacts): string =>
  `Delete the department "${facts.name}" (${facts.campusName ?? 'whole school'})?` +
  ` It has ${membersCopy(facts.memberCount)}${facts.headName ? `, headed by ${facts.headName}` : ' and no head'}.` +
  ' The department and its member list are removed for good; its members stay on the staff.';
