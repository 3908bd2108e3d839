#!/usr/bin/env node
// The run signing pair: the server signs every run step with the private key (RUN_SIGNING_KEY), each worker runs only
// steps it verifies with a public key (RUN_SIGNING_PUBLIC_KEYS). Ed25519; the format is libs/rmq message-signature.ts's:
// private `kid:base64(PKCS8 DER)`, public `kid:base64(SPKI DER)[,kid2:...]`.
//
//   node tools/scripts/run-signing-keys.mjs [--kid ID]
//     prints a new pair as two lines, RUN_SIGNING_KEY=... (the server's) and RUN_SIGNING_PUBLIC_KEYS=... (the workers').
//   node tools/scripts/run-signing-keys.mjs --private-file FILE --public-file FILE [--kid ID]
//     writes each half to its own file (the private one readable by its owner only), unless both already exist: how the
//     Docker setup gives the server and the worker one half each.
//
// Rotation: give the workers the new public key beside the old one (`new,old`), then the server the new private key,
// then, once no step signed by the old key can still be queued, drop the old public key.
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

const KID = /^[A-Za-z0-9_-]{1,64}$/;

/** Where `npm start`, `npm run demo` and the with-env scripts keep the pair they made (git-ignored). */
export const LOCAL_KEYS_FILE = '.naalya/run-signing-keys.json';

export const defaultKid = () => `run-${new Date().toISOString().slice(0, 10).replaceAll('-', '')}-${randomBytes(3).toString('hex')}`;

export const generateRunSigningKeys = (kid = defaultKid()) => {
  if (!KID.test(kid)) throw new Error('The key id must be 1 to 64 letters, digits, "_" or "-".');
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    kid,
    privateKey: `${kid}:${privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64')}`,
    publicKey: `${kid}:${publicKey.export({ format: 'der', type: 'spki' }).toString('base64')}`,
  };
};

/** The public half of a RUN_SIGNING_KEY, as RUN_SIGNING_PUBLIC_KEYS takes it. */
export const publicKeyOf = (privateKeyText) => {
  const text = String(privateKeyText).trim();
  const index = text.indexOf(':');
  if (index < 1) throw new Error('RUN_SIGNING_KEY must be "kid:base64(PKCS8 DER)".');
  const kid = text.slice(0, index);
  let key;
  try {
    key = createPrivateKey({ key: Buffer.from(text.slice(index + 1), 'base64'), format: 'der', type: 'pkcs8' });
  } catch {
    throw new Error(`RUN_SIGNING_KEY (key id "${kid}") is not a PKCS8 DER private key.`);
  }
  return `${kid}:${createPublicKey(key).export({ format: 'der', type: 'spki' }).toString('base64')}`;
};

const writePrivate = (file, text) => {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text, { mode: 0o600 });
  chmodSync(file, 0o600);
};

/** The local pair, made once and kept in LOCAL_KEYS_FILE (owner-only) so the server and the worker agree across runs. */
export const localRunSigningKeys = (file = LOCAL_KEYS_FILE) => {
  if (existsSync(file)) {
    const stored = JSON.parse(readFileSync(file, 'utf8'));
    if (typeof stored.privateKey !== 'string' || typeof stored.publicKey !== 'string') {
      throw new Error(`${file} is not a run signing pair: delete it and a new one is made.`);
    }
    return stored;
  }
  const pair = generateRunSigningKeys();
  writePrivate(file, `${JSON.stringify(pair, null, 2)}\n`);
  console.error(`Made a run signing pair for this machine in ${file} (key id ${pair.kid}); the server gets its private half, the worker its public half.`);
  return pair;
};

const main = (args) => {
  const option = (name) => {
    const index = args.indexOf(name);
    return index < 0 ? undefined : args[index + 1];
  };
  const kid = option('--kid');
  const privateFile = option('--private-file');
  const publicFile = option('--public-file');
  if ((privateFile === undefined) !== (publicFile === undefined)) throw new Error('--private-file and --public-file go together.');
  if (privateFile && publicFile) {
    if (existsSync(privateFile) && existsSync(publicFile)) {
      console.log(`Run signing keys already in ${privateFile} and ${publicFile}: kept.`);
      return;
    }
    const pair = generateRunSigningKeys(kid);
    writePrivate(privateFile, `${pair.privateKey}\n`);
    mkdirSync(dirname(publicFile), { recursive: true });
    writeFileSync(publicFile, `${pair.publicKey}\n`, { mode: 0o644 });
    console.log(`Run signing keys made (key id ${pair.kid}): private half in ${privateFile}, public half in ${publicFile}.`);
    return;
  }
  const pair = generateRunSigningKeys(kid);
  console.log(`RUN_SIGNING_KEY=${pair.privateKey}`);
  console.log(`RUN_SIGNING_PUBLIC_KEYS=${pair.publicKey}`);
};

if (import.meta.url === `file://${process.argv[1]}`) {
  try {
    main(process.argv.slice(2));
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(2);
  }
}
