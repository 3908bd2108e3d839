/** The group role every app login role belongs to; migrations grant to it, so grants do not depend on a password-bearing login name. */
export const APP_GROUP_ROLE = 'naalya_app_rw';
