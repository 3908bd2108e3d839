/**
 * Attribute names as constants, pinned: a rename upstream (gen_ai.system became gen_ai.provider.name in 1.37) changes
 * the dashboards that read them, so it is a deliberate edit here, never a dependency bump.
 *
 * GenAI: OpenTelemetry semantic conventions v1.37.0 (gen-ai spans: invoke_agent, chat, execute_tool; still
 * "Development" status, which is why they are copied rather than imported from the incubating entry point).
 * Messaging: the messaging and RabbitMQ conventions as @opentelemetry/semantic-conventions 1.45.0 names them.
 */
export const GEN_AI_SEMCONV_VERSION = '1.37.0';

export const GenAi = {
  OPERATION_NAME: 'gen_ai.operation.name',
  PROVIDER_NAME: 'gen_ai.provider.name',
  AGENT_NAME: 'gen_ai.agent.name',
  AGENT_ID: 'gen_ai.agent.id',
  CONVERSATION_ID: 'gen_ai.conversation.id',
  REQUEST_MODEL: 'gen_ai.request.model',
  RESPONSE_MODEL: 'gen_ai.response.model',
  RESPONSE_ID: 'gen_ai.response.id',
  RESPONSE_FINISH_REASONS: 'gen_ai.response.finish_reasons',
  USAGE_INPUT_TOKENS: 'gen_ai.usage.input_tokens',
  USAGE_OUTPUT_TOKENS: 'gen_ai.usage.output_tokens',
  TOOL_NAME: 'gen_ai.tool.name',
  TOOL_CALL_ID: 'gen_ai.tool.call.id',
  TOOL_TYPE: 'gen_ai.tool.type',
} as const;

/** gen_ai.operation.name values (v1.37.0); a span is named `<operation> <agent, model or tool name>`. */
export const GenAiOperation = { INVOKE_AGENT: 'invoke_agent', CHAT: 'chat', EXECUTE_TOOL: 'execute_tool' } as const;

export const Messaging = {
  SYSTEM: 'messaging.system',
  OPERATION_NAME: 'messaging.operation.name',
  OPERATION_TYPE: 'messaging.operation.type',
  DESTINATION_NAME: 'messaging.destination.name',
  DESTINATION_TEMPORARY: 'messaging.destination.temporary',
  MESSAGE_ID: 'messaging.message.id',
  MESSAGE_CONVERSATION_ID: 'messaging.message.conversation_id',
  MESSAGE_BODY_SIZE: 'messaging.message.body.size',
  RABBITMQ_ROUTING_KEY: 'messaging.rabbitmq.destination.routing_key',
  RABBITMQ_DELIVERY_TAG: 'messaging.rabbitmq.message.delivery_tag',
} as const;

/** error.type (stable): the class of failure, never its message (which may carry user data). */
export const ERROR_TYPE = 'error.type';
