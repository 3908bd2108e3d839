export { toLangChain, toTurn } from './wire-messages.js';
export { policyResponder } from './scripted-policy.responder.js';
