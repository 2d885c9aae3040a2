from service.pipelines.worker import main

main()
