// kafkajs against a kt broker: produce COUNT records to TOPIC, then consume them back in
// a group, over the connection described by the environment (BOOTSTRAP, and for SASL_SSL
// with SCRAM-SHA-512: CA, USERNAME, PASSWORD). Prints "produced N" and "consumed N".
const fs = require("fs");
const { Kafka, logLevel } = require("kafkajs");

const topic = process.env.TOPIC;
const count = Number(process.env.COUNT || "100");
const config = { clientId: "kt-kafkajs", brokers: process.env.BOOTSTRAP.split(","),
                 logLevel: logLevel.ERROR };
if (process.env.CA) {
  config.ssl = { ca: [fs.readFileSync(process.env.CA, "utf-8")] };
  config.sasl = { mechanism: "scram-sha-512", username: process.env.USERNAME,
                  password: process.env.PASSWORD };
}
const kafka = new Kafka(config);

async function main() {
  const producer = kafka.producer();
  await producer.connect();
  const messages = [];
  for (let i = 0; i < count; i++) messages.push({ key: `k${i}`, value: `v${i}` });
  await producer.send({ topic, messages });
  await producer.disconnect();
  console.log(`produced ${count}`);

  const consumer = kafka.consumer({ groupId: "kt-kafkajs-group" });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let seen = 0;
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`consumed only ${seen}`)), 60000);
    consumer.run({
      eachMessage: async () => {
        seen += 1;
        if (seen === count) { clearTimeout(timer); resolve(); }
      },
    });
  });
  await consumer.disconnect();
  console.log(`consumed ${seen}`);
}

main().catch((e) => { console.error(e.message); process.exit(1); });
