// Real Node SQS clients, unchanged, against the queue's SQS endpoint: `node clients.mjs SCENARIO QUEUE_URL [URL]`
// prints one JSON line of what the clients saw. The endpoint comes from SQS_ENDPOINT; credentials and region from
// the usual AWS_* variables. Each scenario ends by itself within seconds.
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SQSClient,
  SendMessageBatchCommand,
  SendMessageCommand,
} from "@aws-sdk/client-sqs";
import { Consumer } from "sqs-consumer";
import { Producer } from "sqs-producer";

// The second URL: the dead-letter queue (`dead_letter`), or a second queue (`heartbeat`).
const [scenario, queueUrl, otherUrl] = process.argv.slice(2);
const fifo = queueUrl.endsWith(".fifo");
// SQS's longest group id: 128 characters of letters, digits and punctuation.
const LONG_GROUP = "g".repeat(64) + "!#$%&'()*+,-./:;<=>?@[]^_`{|}~" + "x".repeat(34);
const sqs = new SQSClient({ endpoint: process.env.SQS_ENDPOINT, region: process.env.AWS_REGION, maxAttempts: 1 });

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const fifoFields = (group, dedup) => (fifo ? { MessageGroupId: group, MessageDeduplicationId: dedup } : {});

async function receiveAll(url, visibility) {
  const answer = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: url,
      MaxNumberOfMessages: 10,
      VisibilityTimeout: visibility,
      MessageSystemAttributeNames: ["All"],
      MessageAttributeNames: ["All"],
    }),
  );
  return answer.Messages ?? [];
}

// Runs a consumer until `done()` says so (or `seconds` pass), then stops it and waits for its last poll: what that
// poll received is handled too (stopping with `abort` would leave those messages claimed by nobody until their
// visibility timeout ends, as on SQS). The errors it emitted.
async function consume(options, done, seconds = 30) {
  const errors = [];
  const consumer = Consumer.create({ queueUrl, sqs, waitTimeSeconds: 1, ...options });
  for (const event of ["error", "processing_error", "timeout_error"]) {
    consumer.on(event, (error) => errors.push(`${event}: ${error.message}`));
  }
  consumer.start();
  const until = Date.now() + seconds * 1000;
  while (!done() && Date.now() < until) await sleep(50);
  consumer.stop();
  while (consumer.status.isPolling) await sleep(25);
  return errors;
}

const scenarios = {
  // The SDK itself: sends (its MD5 checks on), a receive, and the batch calls with each MessageId as its entry id.
  async sdk() {
    const one = await sqs.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: "one",
        MessageAttributes: { kind: { DataType: "String", StringValue: "single" } },
        ...fifoFields(LONG_GROUP, "one"),
      }),
    );
    const batch = await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: [1, 2, 3].map((n) => ({ Id: `e${n}`, MessageBody: `batch ${n}`, ...fifoFields(LONG_GROUP, `b${n}`) })),
      }),
    );
    const sent = [one.MessageId, ...batch.Successful.map((entry) => entry.MessageId)];
    const received = await receiveAll(queueUrl, 30);
    const entries = received.map((m) => ({ Id: m.MessageId, ReceiptHandle: m.ReceiptHandle }));
    const changed = await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queueUrl,
        Entries: entries.map((entry) => ({ ...entry, VisibilityTimeout: 10 })),
      }),
    );
    const deleted = await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }));
    return {
      sent,
      received: received.map((m) => ({ id: m.MessageId, body: m.Body, attributes: m.MessageAttributes ?? {} })),
      changed: changed.Successful.map((e) => e.Id),
      changeFailed: changed.Failed ?? [],
      deleted: deleted.Successful.map((e) => e.Id),
      deleteFailed: deleted.Failed ?? [],
    };
  },

  // sqs-producer sends in batches of 10; sqs-consumer takes them one at a time, then in batches.
  async produce_and_consume() {
    const producer = Producer.create({ queueUrl, sqs });
    const messages = Array.from({ length: 24 }, (_, n) => ({
      id: `m${n}`,
      body: `produced ${n}`,
      ...(fifo ? { groupId: `group-${n % 3}`, deduplicationId: `d${n}` } : {}),
    }));
    const sent = await producer.send(messages);
    const single = [];
    const singleErrors = await consume(
      {
        handleMessage: async (m) => {
          single.push({ id: m.MessageId, body: m.Body });
          return m; // sqs-consumer 15 deletes what the handler returns
        },
      },
      () => single.length >= 12,
    );
    const batched = [];
    const batchErrors = await consume(
      {
        batchSize: 10,
        handleMessageBatch: async (batch) => {
          for (const m of batch) batched.push({ id: m.MessageId, body: m.Body, group: m.Attributes?.MessageGroupId });
          return batch;
        },
        messageSystemAttributeNames: ["MessageGroupId"],
      },
      () => single.length + batched.length >= 24,
    );
    const left = await receiveAll(queueUrl, 0);
    return {
      sent: sent.map((entry) => ({ id: entry.Id, messageId: entry.MessageId })),
      single,
      batched,
      errors: [...singleErrors, ...batchErrors],
      left: left.map((m) => m.Body),
    };
  },

  // A handler slower than the visibility timeout, kept by sqs-consumer's heartbeat, one message at a time on the
  // first queue and in batches on the second, side by side: a receive by another client while it runs, past the
  // visibility timeout (3 s, a heartbeat each second), finds nothing.
  async heartbeat() {
    const seen = [];
    const meanwhile = [];
    const slow = async (url, bodies) => {
      seen.push(...bodies);
      await sleep(3500);
      meanwhile.push(...(await receiveAll(url, 0)).map((m) => m.Body));
    };
    const run = async (url, body, mode) => {
      await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: body, ...fifoFields("slow", body) }));
      let finished = false;
      const handlers = {
        single: {
          handleMessage: async (m) => {
            await slow(url, [m.Body]);
            finished = true;
            return m;
          },
        },
        batch: {
          batchSize: 5,
          handleMessageBatch: async (batch) => {
            await slow(url, batch.map((m) => m.Body));
            finished = true;
            return batch;
          },
        },
      };
      const options = { queueUrl: url, visibilityTimeout: 3, heartbeatInterval: 1, ...handlers[mode] };
      return consume(options, () => finished);
    };
    const runs = [run(queueUrl, "slow single", "single"), run(otherUrl, "slow batch", "batch")];
    const errors = (await Promise.all(runs)).flat();
    const left = [...(await receiveAll(queueUrl, 0)), ...(await receiveAll(otherUrl, 0))];
    return { seen: seen.sort(), meanwhile, errors, left: left.map((m) => m.Body) };
  },

  // A handler that always fails, visibility ended at once: after maxReceiveCount receives the message is in the DLQ,
  // with the id it was sent with.
  async dead_letter() {
    const sent = await sqs.send(
      new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: "poison", ...fifoFields("poison", "poison") }),
    );
    const attempts = [];
    const errors = await consume(
      {
        terminateVisibilityTimeout: true,
        messageSystemAttributeNames: ["ApproximateReceiveCount"],
        handleMessage: async (m) => {
          attempts.push({ id: m.MessageId, count: m.Attributes?.ApproximateReceiveCount });
          throw new Error("cannot process");
        },
      },
      () => attempts.length >= 2,
    );
    const left = await receiveAll(queueUrl, 0);
    const dead = await receiveAll(otherUrl, 0);
    return {
      sent: sent.MessageId,
      attempts,
      errors: errors.length,
      dead: dead.map((m) => ({ id: m.MessageId, body: m.Body, count: m.Attributes?.ApproximateReceiveCount })),
      left: left.map((m) => m.Body),
    };
  },
};

const result = await scenarios[scenario]();
console.log(JSON.stringify(result));
