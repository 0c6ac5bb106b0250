// Response bodies. The gateway's OpenAPI document types requests and paths (schema.d.ts,
// generated); most routes do not declare their responses there yet, so their shapes are
// written here from docs/identity.md and docs/connections.md.

export interface Providers {
  local: boolean;
  ldap: boolean;
  oidc: boolean;
  oidcButtonLabel: string | null;
  passkey: boolean;
}

export interface Me {
  id: string;
  username: string;
  displayName: string;
  role: string;
  permissions: string[];
  dismissedWarnings: string[];
}

export type PublicSettings = Record<string, unknown>;

export interface LoginResult {
  token?: string;
  user?: Me;
  mfaRequired?: boolean;
  mfaToken?: string;
  mfaMethod?: string;
}

export interface ConnectionSummary {
  id: string;
  name: string;
  protocol: string;
  host: string;
  port: number;
  username: string;
  tags: string[];
  groupId: string | null;
  isShared: boolean;
  shared: boolean;
  sortOrder: number;
}

export interface GroupNode {
  id: string;
  name: string;
  parentId: string | null;
  sortOrder: number;
  children: GroupNode[];
  connections: ConnectionSummary[];
}

export interface ConnectionListing {
  groups: GroupNode[];
  ungrouped: ConnectionSummary[];
  sharedConnections: ConnectionSummary[];
}

export interface Connection extends ConnectionSummary {
  ownerId: string;
  skipCertValidation: boolean;
  recordingEnabled: boolean;
  /** The stored SSH connection this one goes through (ProxyJump), or null. */
  jumpHostId: string | null;
  /** Others use it only with an approved access request. */
  approvalRequired: boolean;
  extraConfig: Record<string, unknown>;
  hasPassword: boolean;
  hasPrivateKey: boolean;
  canEdit: boolean;
  canDelete: boolean;
  canShare: boolean;
  canUse: boolean;
  createdAt: string;
  updatedAt: string;
  [flag: `has${string}`]: unknown;
}

export interface ProtocolField {
  name: string;
  type: "string" | "integer" | "boolean";
  secret: boolean;
  required: boolean;
  default: unknown;
  description: string;
  setFlag?: string;
}

export interface Protocol {
  name: string;
  title: string;
  defaultPort: number;
  terminal: boolean;
  files: boolean;
  stream: boolean;
  /** The protocol checks a server host key (POST /connections/:id/host-key/scan). */
  hostKeys: boolean;
  /** Its connections may go through a jump host. */
  jumpHosts: boolean;
  /** Its connections may serve as jump hosts (ssh). */
  jumpHost: boolean;
  servesConnections: string[];
  fields: ProtocolField[];
  canUse: boolean;
}

export interface Profile extends Me {
  email: string;
  avatarText: string;
  authProvider: string;
  mfaEnabled: boolean;
}

export interface LoginSessionInfo {
  id: string;
  browser: string;
  os: string;
  ipAddress: string;
  createdAt: string;
  lastUsedAt: string;
  isCurrent: boolean;
  method: string;
}

export interface Passkey {
  id: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
}

export interface PasskeyList {
  passkeys: Passkey[];
  canAdd: boolean;
  maxPasskeys: number;
}

export interface MfaSetup {
  secret: string;
  qrDataUrl: string;
  otpauthUrl: string;
}

export interface SshPrefs {
  fontFamily: string;
  fontSize: number;
  cursorStyle: "block" | "bar" | "underline";
  cursorBlink: boolean;
  theme: string;
  scrollback: number;
}

/** One entry of a file listing (docs/files.md); SMB and FTP give only size and isDirectory. */
export interface FileEntry {
  filename: string;
  fileAttributes: {
    size: number;
    isDirectory: boolean;
    permissions?: string;
    mode?: number;
    uid?: number;
    gid?: number;
    atime?: string;
    mtime?: string;
  };
}

/** POST /stat: SFTP gives every field, FTP size, mtime and isDirectory. */
export interface FileStat {
  size: number;
  isDirectory: boolean;
  mode?: number;
  permissions?: string;
  uid?: number;
  gid?: number;
  atime?: string;
  mtime?: string;
}

/** A remembered or presented SSH host key (docs/connections.md, host-key trust). */
export interface HostKeyInfo {
  algorithm: string;
  fingerprint: string;
  publicKey: string;
  seenAt: string;
}

export interface HostKeys {
  trusted: HostKeyInfo | null;
  pending: HostKeyInfo | null;
}

/** POST /connections/:id/host-key/scan. */
export interface HostKeyScan {
  state: "trusted" | "new" | "changed";
  presented: HostKeyInfo;
  trusted: HostKeyInfo | null;
  canAccept: boolean;
}

/** A public key registered for the SSH front door (GET /profile/ssh-keys, sshd pack). */
export interface SshKey {
  id: string;
  name: string;
  algorithm: string;
  fingerprint: string;
  publicKey: string;
  createdAt: string;
  lastUsedAt: string | null;
}
