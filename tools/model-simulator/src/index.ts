export { startModelSimulator, type ModelSimulator, type ModelSimulatorOptions, type RecordedRequest, type Responder, type ResponderRequest } from './server.js';
export { parseScript, parseTurn, Script, ScriptError, Turn, MAX_DELAY_MS, type ScriptInput, type TurnInput } from './script.js';
