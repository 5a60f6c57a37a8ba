import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";

/** What the proxy saw of one gRPC call. */
export interface SeenCall {
  path: string;
  authorization: string | undefined;
  /** The client presented a certificate the proxy's CA signed. */
  clientCertificate: string | undefined;
}

export interface GrpcTlsProxy {
  address: string;
  calls: SeenCall[];
  stop(): Promise<void>;
}

/**
 * A TLS front for a plain-text Temporal dev server, as a Temporal cluster or Temporal Cloud presents
 * itself: the dev server has no TLS of its own. gRPC calls (HTTP/2 streams with trailers) are passed
 * through unchanged; each call's path, authorization header and client certificate are recorded.
 */
export async function startGrpcTlsProxy(opts: {
  upstream: string;
  key: Buffer;
  cert: Buffer;
  /** With a CA, a client certificate it signed is required (mutual TLS). */
  clientCa?: Buffer;
}): Promise<GrpcTlsProxy> {
  const upstream = http2.connect(`http://${opts.upstream}`);
  upstream.on("error", () => {});
  const calls: SeenCall[] = [];
  const server = http2.createSecureServer({
    key: opts.key,
    cert: opts.cert,
    ...(opts.clientCa ? { ca: opts.clientCa, requestCert: true, rejectUnauthorized: true } : {}),
  });
  server.on("stream", (stream, headers) => {
    const socket = stream.session?.socket as TLSSocket | undefined;
    const peer = socket?.authorized ? socket.getPeerCertificate() : undefined;
    const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);
    calls.push({
      path: String(headers[":path"]),
      authorization: first(headers.authorization),
      clientCertificate: first(peer?.subject?.CN),
    });
    const forwarded: http2.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(headers)) {
      if (name === ":scheme") forwarded[name] = "http";
      else if (typeof value === "string" || Array.isArray(value)) forwarded[name] = value;
    }
    const call = upstream.request(forwarded, { endStream: false });
    let trailers: http2.IncomingHttpHeaders | undefined;
    stream.pipe(call);
    call.on("response", (responseHeaders, flags) => {
      // A trailers-only answer (an error status at once) ends in its headers.
      const ended = (flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0;
      if (!stream.destroyed)
        stream.respond(responseHeaders, ended ? { endStream: true } : { waitForTrailers: true });
    });
    call.on("trailers", (received) => {
      trailers = received;
    });
    call.on("data", (chunk: Buffer) => {
      if (!stream.destroyed) stream.write(chunk);
    });
    call.on("end", () => {
      if (!stream.destroyed && !stream.closed && stream.headersSent) stream.end();
    });
    stream.on("wantTrailers", () => (trailers ? stream.sendTrailers(trailers) : stream.close()));
    call.on("error", () => stream.destroy());
    stream.on("error", () => call.close());
    stream.on("close", () => {
      if (!call.closed) call.close(http2.constants.NGHTTP2_CANCEL);
    });
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on("session", (session) => {
    sessions.add(session);
    session.on("close", () => sessions.delete(session));
  });
  // A refused handshake (no or a foreign client certificate) is the client's failure, not the proxy's.
  server.on("tlsClientError", () => {});
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    calls,
    async stop() {
      // Long polls of a worker stay open; end them with the server.
      for (const session of sessions) session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      upstream.destroy();
    },
  };
}
