/**
 * The worker thread of batch-parser.ts: reads each get_batch_data answer it is sent
 * (parseBatchAnswer) and sends the reply back, one at a time.
 */
import { parentPort } from "node:worker_threads";
import { parseBatchAnswer, type BatchParseRequest } from "./batch-answer.js";

const port = parentPort;
if (!port) throw new Error("batch-parse-worker runs as a worker thread");
port.on("message", (req: BatchParseRequest) => port.postMessage(parseBatchAnswer(req)));
