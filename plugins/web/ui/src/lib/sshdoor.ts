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

/** The `Host` alias for a target: its name with anything but letters, digits, `._-` as `-`. */
export function configAlias(target: string): string {
  return target.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^-+|-+$/g, "") || "hostgate";
}

/** The same as a `~/.ssh/config` block, so `ssh <alias>` reaches it. */
export function sshConfigBlock(door: DoorInfo, username: string, target: string, pageHost: string): string {
  const alias = configAlias(target);
  const user = `${username}${door.separator}${target}`;
  return [
    `Host ${alias}`,
    `    HostName ${doorHost(door.address, pageHost)}`,
    `    Port ${door.port}`,
    `    User ${/\s/.test(user) ? `"${user}"` : user}`,
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
