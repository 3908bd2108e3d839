import { RolePermissionEntity } from './role-permission.entity.js';
import { RoleEntity } from './role.entity.js';
import { SchoolEntity } from './school.entity.js';
import { UserRoleEntity } from './user-role.entity.js';
import { UserEntity } from './user.entity.js';

/** Who may act, where, and with which permissions: what authentication and authorization read on every call. */
export const IDENTITY_ENTITIES = [SchoolEntity, UserEntity, RoleEntity, RolePermissionEntity, UserRoleEntity];
