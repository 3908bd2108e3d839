import { AuditLogEntity } from '../audit/audit-log.entity.js';
import { CampusEntity } from '../../campuses/campus.entity.js';
import { DepartmentMemberEntity } from '../../departments/department-member.entity.js';
import { DepartmentEntity } from '../../departments/department.entity.js';
import { RolePermissionEntity } from '../../roles/role-permission.entity.js';
import { RoleEntity } from '../../roles/role.entity.js';
import { UserRoleEntity } from '../../roles/user-role.entity.js';
import { SchoolEntity } from '../../schools/school.entity.js';
import { UserEntity } from '../../staff/user.entity.js';
import { ToolCallLedgerEntity } from '../../naalya-ai/tools/tool-call-ledger.entity.js';
import { AGENT_RUN_ENTITIES } from '../../naalya-ai/agent-runs.entities.js';
import { SCHOOL_DOMAIN_ENTITIES } from './school-domain.entities.js';

export const ENTITIES = [
  SchoolEntity,
  CampusEntity,
  UserEntity,
  RoleEntity,
  RolePermissionEntity,
  UserRoleEntity,
  DepartmentEntity,
  DepartmentMemberEntity,
  AuditLogEntity,
  ToolCallLedgerEntity,
  ...AGENT_RUN_ENTITIES,
  ...SCHOOL_DOMAIN_ENTITIES,
];
