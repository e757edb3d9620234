export { connect } from "./client";
export type {
  ChatAction,
  ChatClient,
  ConnectOptions,
  FileRef,
  Submission,
  SubmitExtra,
  SubmitInput,
} from "./client";
export { ChatHttpError, ChatNetworkError } from "./errors";
export { restClient, RestClient } from "./rest";
export { declaredType, uploadFile, UploadError } from "./uploads";
export { uiContextFromUrl } from "./uiContext";
export type { UIContext } from "./uiContext";
export { getToken, TOKEN_STORAGE_KEY } from "./auth";
export { loadConfig, DEFAULT_CONFIG } from "./config";
export * from "./events";
