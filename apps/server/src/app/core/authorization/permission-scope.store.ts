import { AsyncLocalStorage } from 'node:async_hooks';
import { ForbiddenException } from '@nestjs/common';
import type { AppAbility } from './app-ability.js';

/** The ability rebuilt for this unit of work. Services with a permission fallback read it here. */
export const permissionScopeStore = new AsyncLocalStorage<{ ability: AppAbility }>();

/** Fails closed: a service that needs the ability and finds none refuses rather than skipping its check. */
export const currentAbility = (): AppAbility => {
  const store = permissionScopeStore.getStore();
  if (!store) throw new ForbiddenException('No permissions are in scope for this action.');
  return store.ability;
};
