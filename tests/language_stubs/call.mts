// Calls an ovserve server's gRPC port with the generated TypeScript stubs (clients/typescript) through
// Connect's gRPC transport, as a TypeScript user of the stubs would; prints what it got as one JSON line for
// tests/test_language_stubs.py to compare with the Python client's answers.
//
// Usage: node call.mjs HOST:PORT MODEL PROMPT MAX_TOKENS
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";

import { ChatService } from "../../clients/typescript/src/ovserve/v1/chat_pb.js";
import { ModelService } from "../../clients/typescript/src/ovserve/v1/model_pb.js";

const [target, model, prompt, maxTokens] = process.argv.slice(2);
const transport = createGrpcTransport({ baseUrl: `http://${target}` });
const models = createClient(ModelService, transport);
const chat = createClient(ChatService, transport);

const listed = await models.listModels({});
const request = {
  model,
  messages: [{ role: "user", content: prompt }],
  maxTokens: Number(maxTokens),
  temperature: 0,
};
const unary = await chat.createChatCompletion(request);
let streamed = "";
for await (const chunk of chat.streamChatCompletion(request)) {
  streamed += chunk.choices[0]?.delta?.content ?? "";
}
// A status the server sends arrives as a ConnectError with the gRPC code.
let missingModelCode: string | undefined;
try {
  await models.getModel({ model: "no-such-model" });
} catch (error) {
  missingModelCode = Code[ConnectError.from(error).code];
}
console.log(
  JSON.stringify({
    models: listed.data.map((entry) => entry.id),
    unary: unary.choices[0]?.message?.content,
    finish: unary.choices[0]?.finishReason,
    streamed,
    missingModelCode,
  }),
);
