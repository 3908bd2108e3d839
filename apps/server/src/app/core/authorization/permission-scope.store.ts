import { ForbiddenException } from '@nestjs/common';
import { unitOfWorkSlot } from '../tenancy/tenant-context.js';
import type { AppAbility } from './app-ability.js';

/** The ability rebuilt for this unit of work. Services with a permission fallback read it here. */
const abilitySlot = unitOfWorkSlot<AppAbility>('ability');

/** Runs fn with the ability bound to the open unit of work (opened by the caller, in the tenant it was built for). */
export const runWithAbility = <T>(ability: AppAbility, fn: () => Promise<T>): Promise<T> => {
  abilitySlot.bind(ability);
  return fn();
};

/** The ability in scope, or undefined: for code that must tell "no ability" apart (the fail-open hazard tests). */
export const abilityInScope = (): AppAbility | undefined => abilitySlot.get();

/** Fails closed: a service that needs the ability and finds none refuses rather than skipping its check. */
export const currentAbility = (): AppAbility => {
  const ability = abilitySlot.get();
  if (!ability) throw new ForbiddenException('No permissions are in scope for this action.');
  return ability;
};
