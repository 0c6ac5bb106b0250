// The SSH front door's command line and messages (pure, for Vitest): what a person types to
// reach a stored connection through the gateway with plain `ssh`.

/** Where the front door listens, as `GET /sshd/host-keys` reports it. */
export interface DoorInfo {
  listening: boolean;
  address: string;
  port: number;
  separator: string;
}

/** A host key the gateway presents, to compare with what `ssh` prints the first time. */
export interface DoorHostKey {
  algorithm: string;
  fingerprint: string;
  publicKey: string;
}

// an address no client elsewhere can use as it is: the page's own host name stands in for it
const LOCAL_OR_ANY = /^(|0\.0\.0\.0|::|\[::\]|localhost|127(\.\d{1,3}){3}|::1|\[::1\])$/i;
// characters a POSIX shell leaves alone in a word
const SHELL_SAFE = /^[A-Za-z0-9@%+=:,./_-]+$/;

/** The host name to put in the command: the door's address, or the page's for loopback/any. */
export function doorHost(address: string, pageHost: string): string {
  const host = LOCAL_OR_ANY.test(address.trim()) ? pageHost : address.trim();
  // `ssh` takes a bare IPv6 address after the @; the URL form has brackets
  return host.replace(/^\[(.*)\]$/, "$1");
}

/** One shell word: as is when it is safe, else in single quotes. */
export function shellWord(text: string): string {
  return SHELL_SAFE.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * The target part after the user name: the connection's name when `ssh` can carry it
 * unambiguously (no other connection the person sees has that name, no character the door
 * would mistake), else its id.
 */
export function doorTarget(connection: { id: string; name: string }, namesSeen: readonly string[]): string {
  const clashes = namesSeen.filter((name) => name === connection.name).length > 1;
  const usable = connection.name.trim() === connection.name && connection.name !== "" && !/[@\s]/.test(connection.name);
  return usable && !clashes ? connection.name : connection.id;
}

/** `ssh -p <port> <user><sep><target>@<host>`, quoted for a POSIX shell where needed. */
export function sshCommand(door: DoorInfo, username: string, target: string, pageHost: string): string {
  const destination = `${username}${door.separator}${target}@${doorHost(door.address, pageHost)}`;
  return `ssh -p ${door.port} ${shellWord(destination)}`;
}

// what `ssh` takes as a destination host as it is: the export's alias characters in lower case
// (`ssh` lowercases the host it is given, the gateway matches names exactly), no leading `-`
const JUMP_SAFE = /^[a-z0-9._][a-z0-9._-]*$/;

/**
 * The destination for `ssh -J`: the connection's name when `ssh` passes it on unchanged and
 * no other connection the person sees has it, else its id (what the ssh_config export uses).
 */
export function jumpTarget(connection: { id: string; name: string }, namesSeen: readonly string[]): string {
  const clashes = namesSeen.filter((name) => name === connection.name).length > 1;
  return JUMP_SAFE.test(connection.name) && !clashes ? connection.name : connection.id;
}

/** `user@host:port` for `-J` / `ProxyJump`, an IPv6 address in brackets. */
export function jumpHost(door: DoorInfo, username: string, pageHost: string): string {
  const host = doorHost(door.address, pageHost);
  return `${username}@${host.includes(":") ? `[${host}]` : host}:${door.port}`;
}

/** `ssh -J <user>@<host>:<port> <target>`, quoted for a POSIX shell where needed. */
export function jumpCommand(door: DoorInfo, username: string, target: string, pageHost: string): string {
  return `ssh -J ${shellWord(jumpHost(door, username, pageHost))} ${shellWord(target)}`;
}

/**
 * The `Host` alias for a connection: its name in lower case (`ssh` lowercases what it is given)
 * with anything but letters, digits, `._-` as `-`, as the ssh_config export makes them.
 */
export function configAlias(name: string): string {
  return name.toLowerCase().replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^-+|-+$/g, "") || "hostgate";
}

/**
 * The ProxyJump form as a `~/.ssh/config` block, so `ssh <alias>` (and every IDE) reaches it;
 * `HostName` only when the alias is not the target itself.
 */
export function sshConfigBlock(door: DoorInfo, username: string, alias: string, target: string, pageHost: string): string {
  const jump = jumpHost(door, username, pageHost);
  return [
    `Host ${alias}`,
    ...(alias === target ? [] : [`    HostName ${target}`]),
    `    ProxyJump ${/[\s"']/.test(jump) ? `"${jump.replace(/["\\]/g, "\\$&")}"` : jump}`,
  ].join("\n");
}

/**
 * The sentence for a refused public key (the gateway's 400 names the field first, "publicKey:
 * ..."): said the way a person pasting a key understands it.
 */
export function describeKeyError(message: string): string {
  const text = message.replace(/^publicKey:\s*/, "").trim();
  if (/must not be blank/.test(text)) return "Paste your public key: the one line from your .pub file.";
  if (/never a private key/.test(text)) {
    return "Paste one public key line (from the .pub file, starting ssh-ed25519, ecdsa-sha2-… or ssh-rsa), never a private key.";
  }
  if (/not an OpenSSH public key/.test(text)) {
    return "That is not an OpenSSH public key line. Copy the whole line of your .pub file, for example ssh-ed25519 AAAA… you@laptop.";
  }
  const sentence = text.charAt(0).toUpperCase() + text.slice(1);
  return sentence.endsWith(".") ? sentence : `${sentence}.`;
}
