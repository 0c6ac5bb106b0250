// The operating system's words in a server's message ("[Errno 111] Connect call failed
// ('10.0.0.5', 22)", "[Errno -2] Name or service not known") said plainly, in one place for
// every screen that shows a server's text (describeError, closeReason, the delivery log).

// by errno (Linux numbers; the negative ones are getaddrinfo's)
const ERRNO: Record<string, string> = {
  "111": "the connection was refused (nothing listens on that port, or a firewall rejects it)",
  "110": "the connection timed out",
  "113": "no route to the host",
  "101": "the network is unreachable",
  "104": "the connection was reset by the other side",
  "32": "the connection was closed by the other side",
  "99": "the address cannot be used from this machine",
  "13": "permission denied",
  "-2": "the host name could not be found",
  "-3": "the host name could not be looked up right now (DNS did not answer)",
  "-5": "the host name has no address",
  "-9": "the host name's address family is not supported",
};

/** `text` with each "[Errno N] what the system said" (up to the end of its clause) put in words. */
export function plainOsErrors(text: string): string {
  return text.replace(/\[Errno (-?\d+)\]\s*([^;]*?)(?=(?:;|\.\s|\.$|$))/g, (whole, number: string, said: string) => {
    const plain = ERRNO[number];
    if (plain) return plain;
    // unknown number: keep the system's words, without the bracket code
    const words = said.replace(/\s*\(['"][^)]*\)\s*$/, "").trim();
    return words ? words.charAt(0).toLowerCase() + words.slice(1) : whole;
  });
}
