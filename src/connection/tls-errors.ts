/**
 * What a TLS failure means and what the user can do about it: a pure function of Node's error,
 * so every mode words it the same way and a table of codes tests it.
 */

/** Certificate verification failures: the server's certificate is not trusted. */
const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'CERT_SIGNATURE_FAILURE', 'CERT_UNTRUSTED', 'CERT_REJECTED', 'INVALID_CA',
]);

/**
 * A hint for a TLS error, or undefined when the error is not one of TLS (a refused TCP
 * connection, a reset after the handshake).
 */
export function tlsHint(err: unknown): string | undefined {
  const e = err as { code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = typeof e?.message === 'string' ? e.message : '';
  if (UNTRUSTED.has(code)) return "the server's certificate is not signed by a CA this process trusts: pass the CA certificate (PEM contents) as tls.ca";
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return "the server's certificate does not name the host connected to: connect by a name (or IP) its subjectAltName lists, or set tls.servername";
  if (code === 'CERT_HAS_EXPIRED') return "the server's certificate has expired: renew it on the server";
  if (code === 'CERT_NOT_YET_VALID') return "the server's certificate is not valid yet: check the clocks of client and server";
  if (/CERTIFICATE_REQUIRED|certificate required/i.test(code + ' ' + message)) {
    return 'the server requires a client certificate (tls-auth-clients yes) and none was sent: pass tls.cert and tls.key (PEM contents of a certificate signed by a CA the server trusts)';
  }
  if (/ALERT_BAD_CERTIFICATE|ALERT_UNKNOWN_CA|ALERT_CERTIFICATE_UNKNOWN|bad certificate|unknown ca/i.test(code + ' ' + message)) {
    return 'the server refused our client certificate: check tls.cert and tls.key against the CA the server trusts (tls-ca-cert-file)';
  }
  if (/WRONG_VERSION_NUMBER|wrong version number|packet length too long|unknown protocol/i.test(code + ' ' + message)) {
    return 'the server did not answer in TLS: does this port speak TLS (tls-port), or is it a plain TCP port?';
  }
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_') || /SSL routines|TLS/.test(message)) return 'the TLS handshake failed';
  return undefined;
}

/**
 * A TLS error in a few words: OpenSSL's "8…:error:0A00045C:SSL routines:ssl3_read_bytes:tlsv13
 * alert certificate required:../deps/…" becomes 'the server's TLS alert "certificate required"'
 * (the full text stays in the error's `cause`); other messages are kept.
 */
export function tlsErrorSummary(err: unknown): string {
  const message = typeof (err as { message?: unknown } | null)?.message === 'string' ? (err as Error).message : '';
  const parts = message.split(':');
  const at = parts.findIndex((p) => p === 'SSL routines');
  // OpenSSL 3: "…:SSL routines:<function>:<reason>:<file>:<line>…"; 1.1 has no function field when empty.
  const reason = at >= 0 ? (parts.slice(at + 1, at + 3).find((p) => / /.test(p)) ?? parts[at + 2] ?? '') : '';
  if (reason) {
    const alert = /\balert (.+)$/i.exec(reason.trim());
    return alert ? `the server's TLS alert "${alert[1]}"` : reason.trim();
  }
  return message.replace(/\s+/g, ' ').trim().replace(/\.$/, '');
}

/** Says what a failed socket means, for the errors a first connection meets (refused, unknown host). */
export function socketErrorMessage(label: string, err: Error & { code?: unknown }): string {
  switch (err.code) {
    case 'ECONNREFUSED':
      return `Connection to ${label} refused (${err.message}): no server accepts connections on that port. Check the host and port, and that the server is running.`;
    case 'ENOTFOUND':
      return `Connection to ${label} failed: the host name does not resolve (${err.message}). Check the host.`;
    case 'EAI_AGAIN':
      return `Connection to ${label} failed: the host name could not be resolved now (${err.message}); DNS did not answer.`;
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `Connection to ${label} failed: no route to that host (${err.message}). Check the address and the network between this process and the server.`;
    default:
      return `Connection to ${label} failed: ${err.message}`;
  }
}

/** The message of a connection that closed while the handshake ran. */
export function handshakeClosedMessage(label: string, step: string, cause: unknown, tls: boolean): string {
  const hint = tlsHint(cause);
  if (hint) return `The TLS handshake with ${label} failed (${tlsErrorSummary(cause)}): ${hint}.`;
  const why = (cause as { message?: unknown } | undefined)?.message;
  const detail = typeof why === 'string' && why ? `: ${why.replace(/\s+/g, ' ').trim().replace(/\.$/, '')}` : '';
  if (!tls) {
    return `${label} closed the connection during the handshake (${step})${detail}. If this port expects TLS (tls-port), set the tls option or use a rediss:// URL.`;
  }
  return `${label} closed the connection during the handshake (${step})${detail}. Check the server's log (a TLS handshake error, a client certificate it requires, maxclients).`;
}
