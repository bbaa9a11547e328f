// Orderly's TypeScript SDK: a client of the HTTP API, webhook receiver
// helpers that verify both signature schemes, and a pull worker.
export * from "./types.js";
export { Client, OrderlyError, type ClientOptions } from "./client.js";
export {
  Answer, DEFAULT_TOLERANCE, SignatureError, handleDelivery, parseRequest, payloadBytes, receiver,
  signOrderly, signStandard, standardKey, verifyOrderly, verifyRequest, verifyStandard,
  type Delivery, type DeliveryHandler, type HeaderBag, type Secret, type VerifyOptions,
} from "./webhook.js";
export { Worker, type Window, type WindowHandler, type WorkerOptions } from "./worker.js";
