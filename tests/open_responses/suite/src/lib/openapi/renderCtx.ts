export type OpenApiRenderCtx = {
  depth: number;
  refStack: string[];
  maxDepth: number;
};
