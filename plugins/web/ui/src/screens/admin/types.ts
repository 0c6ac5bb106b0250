// Response shapes of the administration routes, straight from the generated schema.
import type { components } from "../../api/schema";

type Schemas = components["schemas"];

export type UserRecord = Schemas["UserRecord"];
export type RoleRecord = Schemas["RoleRecord"];
export type PermissionCatalogue = Schemas["PermissionGroups"];

type RoleBody = NonNullable<import("../../api/schema").operations["post_create_role"]["requestBody"]>["content"]["application/json"];
/**
 * A permission name as the request bodies type it: the document lists the names of the
 * packs installed when it was generated, but a pack added later has names of its own,
 * which the catalogue (GET /roles/permissions) brings at run time.
 */
export type PermissionName = NonNullable<RoleBody["permissions"]>[number];

/** Names from the run-time catalogue, typed for a request body. */
export function asPermissions(names: readonly string[]): PermissionName[] {
  return names as PermissionName[];
}
export type SettingInfo = Schemas["SettingInfo"];
export type PackInfo = Schemas["PackInfo"];
export type VersionInfo = Schemas["Version"];
export type HealthInfo = Schemas["Health"];
export type AuditEntry = Schemas["AuditEntry"];
export type AuditPage = Schemas["AuditPage"];
export type AuditUser = Schemas["AuditUser"];
export type ChainCheck = Schemas["ChainCheck"];
export type ChannelState = Schemas["ChannelState"];
export type ChannelField = Schemas["ChannelField"];
export type Rule = Schemas["Rule"];
export type Recipients = Schemas["Recipients"];
export type LogEntry = Schemas["LogEntry"];
export type LogPage = Schemas["LogPage"];
export type BackupSize = Schemas["BackupSize"];
export type ExportLink = Schemas["ExportLink"];
export type Restored = Schemas["Restored"];
