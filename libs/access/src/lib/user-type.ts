/** Who a user is to the platform: school staff belong to one school; platform admins to none. */
export const UserType = {
  STAFF: 'staff',
  PLATFORM_ADMIN: 'platform_admin',
} as const;
export type UserType = (typeof UserType)[keyof typeof UserType];
export const USER_TYPES = Object.values(UserType) as [UserType, ...UserType[]];
