// Response shapes of the administration routes, straight from the generated schema.
import type { components } from "../../api/schema";

type Schemas = components["schemas"];

export type UserRecord = Schemas["UserRecord"];
export type RoleRecord = Schemas["RoleRecord"];
