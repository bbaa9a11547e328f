// The few Node.js APIs the SDK uses, declared here so that the package needs
// no dev dependency but typescript (no @types/node).
declare module "node:crypto" {
  interface Hmac {
    update(data: string | Uint8Array): Hmac;
    digest(): Uint8Array;
    digest(encoding: "hex" | "base64"): string;
  }
  export function createHmac(algorithm: "sha256", key: string | Uint8Array): Hmac;
  export function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean;
}

declare module "node:http" {
  export interface IncomingMessage extends AsyncIterable<Uint8Array> {
    method?: string;
    url?: string;
    headers: Record<string, string | string[] | undefined>;
  }
  export interface ServerResponse {
    writeHead(status: number, headers?: Record<string, string | number>): ServerResponse;
    end(body?: string | Uint8Array): void;
  }
}

declare module "node:http" {
  export interface AgentOptions {
    keepAlive?: boolean;
  }
  export class Agent {
    constructor(opts?: AgentOptions);
    destroy(): void;
  }
  export interface ClientResponse {
    statusCode?: number;
    statusMessage?: string;
    setEncoding(enc: "utf8"): void;
    on(ev: "data", f: (chunk: string) => void): ClientResponse;
    on(ev: "end", f: () => void): ClientResponse;
    on(ev: "error" | "aborted", f: (e?: Error) => void): ClientResponse;
  }
  export interface ClientRequest {
    on(ev: "error", f: (e: Error) => void): ClientRequest;
    destroy(e?: Error): void;
    end(data?: string): void;
  }
  export interface RequestOptions {
    host: string;
    port?: number | string;
    path: string;
    method: string;
    headers: Record<string, string | number>;
    agent: Agent;
  }
  export function request(opts: RequestOptions, cb: (res: ClientResponse) => void): ClientRequest;
}

declare module "node:https" {
  import type { Agent as HTTPAgent, AgentOptions, ClientRequest, ClientResponse, RequestOptions } from "node:http";
  export class Agent extends HTTPAgent {
    constructor(opts?: AgentOptions);
  }
  export function request(opts: RequestOptions, cb: (res: ClientResponse) => void): ClientRequest;
}

declare const Buffer: { byteLength(s: string): number };
