import { ArgumentsHost, Catch, HttpException, Injectable, type ExceptionFilter } from '@nestjs/common';
import { BaseExceptionFilter, HttpAdapterHost } from '@nestjs/core';
import { httpErrorCodeForStatus } from '@naalya/access';
import type { ErrorCode } from '@naalya/agent-tools';

const CODES = new WeakMap<HttpException, ErrorCode>();

/** Names the refusal an exception stands for, when its status alone says too little. */
export const withCode = <E extends HttpException>(code: ErrorCode, exception: E): E => {
  CODES.set(exception, code);
  return exception;
};

/** The code an exception answers with, on a REST route and as a tool's error alike. */
export const errorCodeOf = (exception: HttpException): ErrorCode => CODES.get(exception) ?? httpErrorCodeForStatus(exception.getStatus());

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Adds `code` to every HTTP error body and changes nothing else: Nest's own filter still chooses the status, the body
 * and what is logged, and this only sees the body it replies with.
 */
@Catch()
@Injectable()
export class ErrorCodeFilter implements ExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const adapter = this.adapterHost.httpAdapter;
    const coding = Object.create(adapter) as typeof adapter;
    coding.reply = (response: unknown, body: unknown, status?: number) => {
      const code = exception instanceof HttpException ? errorCodeOf(exception) : httpErrorCodeForStatus(status ?? 500);
      return adapter.reply(response, isRecord(body) ? { ...body, code } : body, status);
    };
    new BaseExceptionFilter(coding).catch(exception, host);
  }
}
