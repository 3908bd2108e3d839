import { SetMetadata } from '@nestjs/common';
import type { Action, Resource } from '@naalya/access';
import type { PermissionGate } from './app-ability.js';

export const REQUIRE_PERMISSIONS = 'naalya:require-permissions';

/** The route's CASL gate; a casl tool for the same operation must use the same pair. */
export const RequirePermissions = (action: Action, resource: Resource) =>
  SetMetadata(REQUIRE_PERMISSIONS, { action, resource } satisfies PermissionGate);
