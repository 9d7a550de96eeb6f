/**
 * Every body field naming an entity (`*_id`, `*_ids`) and how it is checked against the caller's
 * tenant and visibility (issue 33). `hidden-values.reliability.ts` fails for a field found in a
 * documented request body and missing here; the existence-oracle suite proves, where its fixtures
 * reach them, that the checks answer a foreign, a hidden and a missing id alike.
 */
export const BODY_ID_FIELDS: Record<string, string> = {
  role_id:
    "users: a role of the tenant (roles.view not needed: every user manager assigns roles), active, and within the actor's own permissions (403 otherwise)",
  lang_id: 'a language: a global catalogue (no tenant), must exist (422)',
  folder_id:
    "roles/departments: a visible folder of the tenant of type role/department (isUsableFolder); content: the content resource's folder check (tenant, type, folder visibility) — 422 like a missing one",
  user_ids: 'department members / notification recipients: users of the tenant (missing or foreign → 422 listing them)',
  notification_setting_id: 'a notification setting of the tenant (422)',
  permission_entity_id: 'a grantee (user, role, department) of the tenant (validateGrantElements, 422)',
  target_entity_id:
    'a grant target the caller may know (existence rule: hidden, foreign and missing answer alike, 422)',
  parent_id:
    'folders: a visible folder of the tenant with the same type; directories: a visible directory (content references) — 422',
  icon_id: 'opaque: a number of the front end’s icon catalogue, names no entity of the API (no icons table)',
  department_ids: 'notification recipients: departments of the tenant (422)',
  directory_id: 'a visible directory of the tenant (content references, 422)',
  channel_id: "an infoboard channel folder of the tenant the caller may see (the content resource's folder check, 422)",
  targetable_id: 'a share target of the tenant the caller may view and share (existence rule, 422)',
  default_role_id: "OIDC settings: a role of the tenant (422), within the actor's own permissions (403), as role_id",
  client_id: "OIDC settings: the client's id at the identity provider, names no entity of the API",
  user_id: 'shared items: accepted and ignored (the creator is always the requester, contract 30)',
}
